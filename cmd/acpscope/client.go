package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
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
	tracker   *adapter.Tracker
	out       textSink
	policy    string
	root      string // fs requests are served only below this directory
	extension acp.ExtensionMethodHandler
}

// textSink receives agent message text and permission answers; the
// terminal view implements it.
type textSink interface {
	AgentText(sessionID, chunk string)
	Permission(title, answer string)
}

var _ acp.Client = (*scopeClient)(nil)

// SessionUpdate feeds the tracker (which emits card events) and shows agent
// message text, except a running subagent's text sent as the session's own
// (Copilot), which its card shows as the result.
func (c *scopeClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if chunk := n.Update.AgentMessageChunk; chunk != nil && chunk.Content.Text != nil {
		if _, child := c.tracker.ChildText(string(n.SessionId)); !child {
			c.out.AgentText(string(n.SessionId), chunk.Content.Text.Text)
		}
	}
	c.tracker.SessionUpdate(n)
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

// maxReadFileBytes bounds the file ReadTextFile serves: the answer has to
// fit in one JSON-RPC frame, and an agent must not make acpscope read
// without end.
const maxReadFileBytes = 16 << 20

// ReadTextFile serves regular files below the working directory, so an
// agent can read what it was pointed at and nothing else: a symbolic link
// leading outside, a device, a FIFO or a file larger than maxReadFileBytes is
// refused.
func (c *scopeClient) ReadTextFile(_ context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	path, err := c.inside(req.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	data, err := readRegularFile(path, maxReadFileBytes)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	text := string(data)
	if req.Line != nil || req.Limit != nil {
		lines := strings.SplitAfter(text, "\n")
		start := 0
		if req.Line != nil && *req.Line > 1 {
			start = min(*req.Line-1, len(lines))
		}
		end := len(lines)
		if req.Limit != nil && *req.Limit >= 0 && *req.Limit < end-start {
			end = start + *req.Limit // compared first: start+limit may overflow
		}
		text = strings.Join(lines[start:end], "")
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

// readRegularFile reads path when it is a regular file of at most limit
// bytes. It never blocks on a FIFO or reads a device without end.
func readRegularFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
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

// inside resolves p and checks that it lies below the client's root, after
// following symbolic links (so a link inside the root cannot lead out).
func (c *scopeClient) inside(p string) (string, error) {
	if c.root == "" || !filepath.IsAbs(p) {
		return "", acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("path %q is not an absolute path below the working directory", p)})
	}
	outside := acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("path %q is outside the working directory", p)})
	clean := filepath.Clean(p)
	if !below(c.root, clean) {
		return "", outside
	}
	root, err := filepath.EvalSymlinks(c.root)
	if err != nil {
		return "", acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	if !below(root, real) {
		return "", outside
	}
	return real, nil
}

// below reports whether path is root or lies under it (both clean and
// absolute).
func below(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
