package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
)

// Permission policies for session/request_permission (--permission).
const (
	PolicyAllow  = "allow"  // pick an allow option (allow_once before allow_always)
	PolicyReject = "reject" // pick a reject option (reject_once before reject_always)
	PolicyCancel = "cancel" // answer cancelled
)

// scopeClient is acpscope's acp.Client. It answers the agent's requests by
// the configured policies and hands every session update to the tracker and
// the terminal view. It never writes to the connection itself.
type scopeClient struct {
	tracker *adapter.Tracker
	out     textSink
	// held holds agent text that may be a background subagent's (see
	// heldText); nil shows every chunk that is not a child's at once.
	held      *heldText
	policy    string
	root      string // fs requests are served only below this directory
	extension acp.ExtensionMethodHandler
	// onUpdate, when set, is called before each session/update is handed
	// to the tracker (a replay sets the recorded time there).
	onUpdate func()
	// traces, when set, gets the permission requests and their answers.
	traces traces.TurnObservers
}

// textSink receives agent message text and permission answers; the
// terminal view implements it.
type textSink interface {
	AgentMessage(sessionID, messageID, chunk string)
	Permission(title, answer string)
}

var _ acp.Client = (*scopeClient)(nil)

// SessionUpdate feeds the tracker (which emits card events) and shows agent
// message text, except a running subagent's text sent as the session's own
// (Copilot; Qwen Code tags it with the child), which its card shows as the
// result. Text that may be a background subagent's (Copilot) is held until
// the tracker can tell (heldText).
func (c *scopeClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	sessionID := string(n.SessionId)
	if chunk := n.Update.AgentMessageChunk; chunk != nil && chunk.Content.Text != nil {
		if _, child := c.tracker.ChildMessage(n); !child {
			messageID := ""
			if chunk.MessageId != nil {
				messageID = string(*chunk.MessageId)
			}
			if c.held != nil {
				c.held.agentText(sessionID, messageID, chunk.Content.Text.Text)
			} else {
				c.out.AgentMessage(sessionID, messageID, chunk.Content.Text.Text)
			}
		}
	}
	if c.onUpdate != nil {
		c.onUpdate()
	}
	c.tracker.SessionUpdate(n)
	if c.held != nil {
		c.held.updated(sessionID)
	}
	return nil
}

// RequestPermission answers by the --permission policy: the first option of
// the wanted kind (once before always), else cancelled.
func (c *scopeClient) RequestPermission(_ context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	outcome, answer := choosePermission(c.policy, req.Options)
	title := ""
	if req.ToolCall.Title != nil {
		title = *req.ToolCall.Title
	}
	c.out.Permission(title, answer)
	c.traces.PermissionAsked(string(req.SessionId), string(req.ToolCall.ToolCallId), title, traces.OptionNames(req.Options))
	c.traces.PermissionAnswered(string(req.SessionId), string(req.ToolCall.ToolCallId), title, answer)
	return acp.RequestPermissionResponse{Outcome: outcome}, nil
}

// choosePermission picks the first option of the kind the policy wants
// (once before always); without one, or under PolicyCancel, the request is
// answered cancelled. answer describes the choice for the view.
func choosePermission(policy string, options []acp.PermissionOption) (acp.RequestPermissionOutcome, string) {
	var want []acp.PermissionOptionKind
	switch policy {
	case PolicyAllow:
		want = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways}
	case PolicyReject:
		want = []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways}
	}
	for _, kind := range want {
		for _, o := range options {
			if o.Kind == kind {
				return acp.NewRequestPermissionOutcomeSelected(o.OptionId), fmt.Sprintf("%s (%s)", o.Name, kind)
			}
		}
	}
	return acp.NewRequestPermissionOutcomeCancelled(), "cancelled"
}

// ReadTextFile serves regular files below the working directory, so an
// agent can read what it was pointed at and nothing else. The path is
// opened beneath the root in one step that no concurrent swap of a path
// component can lead outside (openBeneath); a device, a FIFO, or a file
// over maxReadFileBytes (or whose answer would encode to more than
// maxReadAnswerBytes) is refused. At most maxConcurrentReads are served at
// once, and a line/limit window is read without holding the whole file.
func (c *scopeClient) ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	rel, err := c.inside(req.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	release, err := acquireRead(ctx)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	defer release()
	text, err := c.read(rel, req.Line, req.Limit)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

// read opens rel beneath the root and reads the selected lines of it.
func (c *scopeClient) read(rel string, line, limit *int) (string, error) {
	f, err := openBeneath(c.root, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", f.Name())
	}
	if st.Size() > maxReadFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", f.Name(), maxReadFileBytes)
	}
	text, err := readText(f, st.Size(), line, limit)
	if errors.Is(err, errTooLarge) {
		return "", fmt.Errorf("%s: %v (limit %d bytes read)", f.Name(), err, maxReadFileBytes)
	}
	return text, err
}

// WriteTextFile is refused: acpscope observes, it does not let agents change
// files through the client.
func (c *scopeClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

// The terminal methods are not offered (acpscope declares no terminal
// capability); an agent that calls them anyway gets -32601.

func (c *scopeClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *scopeClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *scopeClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *scopeClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *scopeClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// HandleExtensionMethod receives every inbound request the SDK does not
// know (cursor/task among them). The dialect's handler decides; without one
// the answer is -32601, exactly as a client without extensions.
func (c *scopeClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if c.extension != nil {
		return c.extension.HandleExtensionMethod(ctx, method, params)
	}
	return nil, acp.NewMethodNotFound(method)
}

// inside checks that p is an absolute path lexically below the client's
// root and returns it relative to the root ("." for the root itself).
// Symbolic links are resolved by the open itself, beneath the root
// (openBeneath), never here: a check here and an open by name later could
// be raced.
func (c *scopeClient) inside(p string) (string, error) {
	if c.root == "" || !filepath.IsAbs(p) {
		return "", acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("path %q is not an absolute path below the working directory", p)})
	}
	clean := filepath.Clean(p)
	rel, err := filepath.Rel(c.root, clean)
	if err != nil || !below(c.root, clean) {
		return "", acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("path %q is outside the working directory", p)})
	}
	return filepath.ToSlash(rel), nil
}

// below reports whether path is root or lies under it (both clean and
// absolute).
func below(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
