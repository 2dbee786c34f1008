//go:build conformance

package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/conformance/internal/peeragent"
)

// tsDir is the TypeScript peers' package, installed by conformance/run.sh
// (npm ci from the committed package-lock.json).
func tsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("TypeScript peers not installed (run `npm ci` in %s; conformance/run.sh does): %v", dir, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not found: %v", err)
	}
	return dir
}

// recordingClient answers the TypeScript agent: it allows the permission,
// serves one file and keeps every session update in arrival order.
type recordingClient struct {
	stubClient
	mu      sync.Mutex
	updates []acp.SessionNotification
	reads   []string
}

func (c *recordingClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	return nil
}

func (c *recordingClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	for _, o := range p.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

func (c *recordingClient) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	c.mu.Lock()
	c.reads = append(c.reads, p.Path)
	c.mu.Unlock()
	return acp.ReadTextFileResponse{Content: "module example.com/repo\n\ngo 1.26\n"}, nil
}

// TestTSAgentDrivenByGoClient: our Go client drives the official
// TypeScript SDK's agent through a whole turn with a tool call, a
// permission request, a file read and subagent_update frames, and decodes
// every update into the typed union.
func TestTSAgentDrivenByGoClient(t *testing.T) {
	dir := tsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	cmd := exec.CommandContext(ctx, "node", "agent.mjs")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()

	client := &recordingClient{}
	conn := acp.NewClientSideConnection(client, stdin, stdout)
	init, err := conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{
			Fs:        acp.FileSystemCapabilities{ReadTextFile: true},
			Subagents: &acp.SubagentCapabilities{},
		},
	})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if init.AgentInfo == nil || init.AgentInfo.Name != "ts-peer-agent" {
		t.Fatalf("agentInfo = %+v", init.AgentInfo)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "/repo", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.ContentBlock{Text: &acp.ContentBlockText{Text: "explore"}}}})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("stopReason = %q", resp.StopReason)
	}

	client.mu.Lock()
	defer client.mu.Unlock()
	// The response barrier: every update sent before the prompt result has
	// been handled when Prompt returns.
	if len(client.updates) != 8 {
		t.Fatalf("got %d updates, want 8: %+v", len(client.updates), client.updates)
	}
	u := client.updates
	if u[0].Update.AgentMessageChunk == nil || u[1].Update.ToolCall == nil || u[1].Update.ToolCall.ToolCallId != "ts-tool-1" {
		t.Errorf("updates 0-1 = %+v %+v", u[0].Update, u[1].Update)
	}
	sub := u[2].Update.SubagentUpdate
	if sub == nil || sub.SessionId != "ts-child-1" {
		t.Fatalf("update 2 is not the subagent_update of ts-child-1: %+v", u[2].Update)
	}
	if title, ok := sub.Title.Value(); !ok || title != "Explore" {
		t.Errorf("subagent title = %q, %v", title, ok)
	}
	if st, ok := sub.State.Value(); !ok || st.Running == nil {
		t.Errorf("subagent state = %+v, want running", st)
	}
	if u[3].SessionId != "ts-child-1" || u[3].Update.AgentMessageChunk == nil {
		t.Errorf("update 3 = %+v, want the child's message chunk", u[3])
	}
	if u[4].Update.ToolCallUpdate == nil || u[4].Update.ToolCallUpdate.Status == nil || *u[4].Update.ToolCallUpdate.Status != acp.ToolCallStatusInProgress {
		t.Errorf("update 4 = %+v, want tool_call_update in_progress", u[4].Update)
	}
	idle := u[5].Update.SubagentUpdate
	if idle == nil {
		t.Fatalf("update 5 = %+v, want subagent_update", u[5].Update)
	}
	if st, ok := idle.State.Value(); !ok || st.Idle == nil || st.Idle.StopReason == nil || *st.Idle.StopReason != "end_turn" {
		t.Errorf("subagent state = %+v, want idle/end_turn", st)
	}
	done := u[6].Update.ToolCallUpdate
	if done == nil || done.Status == nil || *done.Status != acp.ToolCallStatusCompleted || len(done.Content) != 1 ||
		done.Content[0].Content == nil || done.Content[0].Content.Content.Text == nil ||
		done.Content[0].Content.Content.Text.Text != "module example.com/repo\n\ngo 1.26\n" {
		t.Errorf("update 6 = %+v, want the completed tool call with the file", u[6].Update)
	}
	if u[7].Update.AgentMessageChunk == nil {
		t.Errorf("update 7 = %+v", u[7].Update)
	}
	if len(client.reads) != 1 || client.reads[0] != "/repo/go.mod" {
		t.Errorf("reads = %v", client.reads)
	}
}

// TestTSClientDrivesGoAgent: the official TypeScript SDK's client spawns
// the conformance peer agent (our SDK's AgentSideConnection on stdio) and
// drives a turn; its schema validation must accept everything we send,
// subagent_update included.
func TestTSClientDrivesGoAgent(t *testing.T) {
	dir := tsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "peeragent")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kdlbs/acp-go-sdk/conformance/internal/peeragent/cmd/peeragent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build peeragent: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, "node", "client.mjs", bin)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ts client: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		Init struct {
			AgentInfo struct {
				Name string `json:"name"`
			} `json:"agentInfo"`
		} `json:"init"`
		SessionID     string `json:"sessionId"`
		StopReason    string `json:"stopReason"`
		UnknownMethod struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"unknownMethod"`
		Updates []struct {
			SessionID string          `json:"sessionId"`
			Update    json.RawMessage `json:"update"`
		} `json:"updates"`
		Requests []struct {
			Method string `json:"method"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("ts client output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if got.Init.AgentInfo.Name != peeragent.Name || got.SessionID != peeragent.SessionID || got.StopReason != "end_turn" {
		t.Fatalf("summary = %+v", got)
	}
	if got.UnknownMethod.Code != -32601 || string(got.UnknownMethod.Data) != `{"method":"cursor/task"}` {
		t.Errorf("cursor/task to our agent = %+v, want -32601 {method}", got.UnknownMethod)
	}
	var kinds []string
	for _, u := range got.Updates {
		var k struct {
			Kind  string `json:"sessionUpdate"`
			Title string `json:"title"`
		}
		_ = json.Unmarshal(u.Update, &k)
		kinds = append(kinds, k.Kind)
	}
	want := []string{"agent_message_chunk", "tool_call", "tool_call_update", "subagent_update", "subagent_update", "tool_call_update", "agent_message_chunk"}
	if len(kinds) != len(want) {
		t.Fatalf("the TypeScript client accepted updates %v, want %v\nstderr:\n%s", kinds, want, stderr.String())
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("the TypeScript client accepted updates %v, want %v", kinds, want)
		}
	}
	if len(got.Requests) != 2 || got.Requests[0].Method != "session/request_permission" || got.Requests[1].Method != "fs/read_text_file" {
		t.Errorf("requests the client answered = %+v", got.Requests)
	}
	if stderr.Len() > 0 {
		t.Logf("ts client stderr:\n%s", stderr.String())
	}
}

// TestTSClientDrivesExampleAgent: the official TypeScript SDK's client
// drives sdk/example/agent (the SDK's own example program) through a turn
// that reads a file through the client as a visible tool call.
func TestTSClientDrivesExampleAgent(t *testing.T) {
	dir := tsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "example-agent")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./example/agent")
	build.Dir = filepath.Join("..", "..", "sdk")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build sdk/example/agent: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, "node", "client.mjs", bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TS_PROMPT=read /repo/go.mod")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ts client: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		Init struct {
			AgentInfo struct {
				Name string `json:"name"`
			} `json:"agentInfo"`
		} `json:"init"`
		StopReason    string `json:"stopReason"`
		UnknownMethod struct {
			Code int `json:"code"`
		} `json:"unknownMethod"`
		Updates []struct {
			Update struct {
				Kind    string `json:"sessionUpdate"`
				Status  string `json:"status"`
				Content any    `json:"content"`
			} `json:"update"`
		} `json:"updates"`
		Requests []struct {
			Method string `json:"method"`
			Params struct {
				Path string `json:"path"`
			} `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("ts client output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if got.Init.AgentInfo.Name != "example-agent" || got.StopReason != "end_turn" || got.UnknownMethod.Code != -32601 {
		t.Fatalf("summary = %+v", got)
	}
	var kinds []string
	for _, u := range got.Updates {
		kinds = append(kinds, u.Update.Kind+"/"+u.Update.Status)
	}
	want := []string{"agent_message_chunk/", "agent_message_chunk/", "agent_message_chunk/", "agent_message_chunk/", "tool_call/pending", "tool_call_update/completed"}
	if len(kinds) != len(want) {
		t.Fatalf("the TypeScript client accepted updates %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("the TypeScript client accepted updates %v, want %v", kinds, want)
		}
	}
	if len(got.Requests) != 1 || got.Requests[0].Method != "fs/read_text_file" || got.Requests[0].Params.Path != "/repo/go.mod" {
		t.Errorf("requests the client answered = %+v", got.Requests)
	}
}
