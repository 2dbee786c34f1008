//go:build conformance

package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// nextClient is the Go client of TestTSAgentNextProtocol: it implements the
// optional handlers of the newer protocol and keeps what each one got, typed.
type nextClient struct {
	stubClient
	mu          sync.Mutex
	updates     []acp.SessionUpdate
	elicitation *acp.CreateElicitationRequest
	completed   *acp.CompleteElicitationNotification
	authUpdate  *acp.UnstableAuthStatusUpdateNotification
	mcp         *acp.UnstableMessageMcpRequest
	// held is closed when the TypeScript agent says (a "holding" notice)
	// that it holds the session/set_title the test then cancels.
	held     chan struct{}
	heldOnce sync.Once
}

func (c *nextClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if u := n.Update.Notice; u != nil && u.Title == "holding" {
		c.heldOnce.Do(func() { close(c.held) })
		return nil
	}
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	return nil
}

func (c *nextClient) CreateElicitation(_ context.Context, p acp.CreateElicitationRequest) (acp.CreateElicitationResponse, error) {
	c.mu.Lock()
	c.elicitation = &p
	c.mu.Unlock()
	return acp.CreateElicitationResponse{Accept: &acp.CreateElicitationAccept{Content: map[string]any{"name": "gopher"}}}, nil
}

func (c *nextClient) CompleteElicitation(_ context.Context, p acp.CompleteElicitationNotification) error {
	c.mu.Lock()
	c.completed = &p
	c.mu.Unlock()
	return nil
}

func (c *nextClient) UnstableAuthStatusUpdate(_ context.Context, p acp.UnstableAuthStatusUpdateNotification) error {
	c.mu.Lock()
	c.authUpdate = &p
	c.mu.Unlock()
	return nil
}

func (c *nextClient) UnstableMessageMcp(_ context.Context, p acp.UnstableMessageMcpRequest) (acp.UnstableMessageMcpResponse, error) {
	c.mu.Lock()
	c.mcp = &p
	c.mu.Unlock()
	return acp.UnstableMessageMcpResponse(map[string]any{"tools": []any{map[string]any{"name": "grep"}}}), nil
}

// TestTSAgentNextProtocol: our Go client calls every newer client-to-agent
// method on the official TypeScript SDK's agent (which validates each
// against its schema and reports the params it got), and the TypeScript
// agent calls every newer agent-to-client method and sends every newer
// session update, which the Go client receives typed.
func TestTSAgentNextProtocol(t *testing.T) {
	dir := tsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	cmd := exec.CommandContext(ctx, "node", "agent_next.mjs")
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

	client := &nextClient{held: make(chan struct{})}
	conn := acp.NewClientSideConnection(client, stdin, stdout)
	init, err := conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{
			PlanCapabilities: &acp.PlanCapabilities{},
			Elicitation:      &acp.ElicitationCapabilities{Form: &acp.ElicitationFormCapabilities{}},
		},
	})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	sc := init.AgentCapabilities.SessionCapabilities
	if sc.Delete == nil || sc.Archive == nil || sc.Status == nil || sc.Title == nil {
		t.Errorf("sessionCapabilities = %+v", sc)
	}
	if init.AgentCapabilities.Auth.Status == nil {
		t.Errorf("auth capabilities = %+v", init.AgentCapabilities.Auth)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "/repo", McpServers: []acp.McpServer{},
		SystemPrompt: &acp.UnstableSystemPrompt{Mode: acp.UnstableSystemPromptModeAppend, Content: []acp.ContentBlock{acp.TextBlock("be brief")}}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	sid := string(sess.SessionId)
	del, err := conn.DeleteSession(ctx, acp.DeleteSessionRequest{SessionId: "old-1"})
	if err != nil || del.Meta["deleted"] != "old-1" {
		t.Fatalf("session/delete = %+v, %v", del, err)
	}
	if _, err := conn.UnstableArchiveSession(ctx, acp.UnstableArchiveSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatalf("session/archive: %v", err)
	}
	if _, err := conn.UnstableUnarchiveSession(ctx, acp.UnstableUnarchiveSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatalf("session/unarchive: %v", err)
	}
	st, err := conn.UnstableSessionStatus(ctx, acp.UnstableSessionStatusRequest{SessionId: acp.SessionId(sid)})
	if err != nil || st.Status != acp.UnstableSessionStatusSaved {
		t.Fatalf("session/status = %+v, %v", st, err)
	}
	if _, err := conn.UnstableSetSessionTitle(ctx, acp.UnstableSetSessionTitleRequest{SessionId: acp.SessionId(sid), Title: "Explore"}); err != nil {
		t.Fatalf("session/set_title: %v", err)
	}
	// $/cancel_request: a call the agent holds, cancelled once it says so.
	holdCtx, holdCancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-client.held:
			holdCancel()
		case <-holdCtx.Done():
		}
	}()
	_, err = conn.UnstableSetSessionTitle(holdCtx, acp.UnstableSetSessionTitleRequest{SessionId: acp.SessionId(sid), Title: "hold"})
	holdCancel()
	var rerr *acp.RequestError
	if !errors.As(err, &rerr) || rerr.Code != -32800 {
		t.Fatalf("held session/set_title ended with %v, want the SDK's -32800 for a cancelled call", err)
	}
	auth, err := conn.UnstableAuthStatus(ctx, acp.UnstableAuthStatusRequest{})
	if err != nil || auth.State != acp.UnstableAuthStateAuthenticated || len(auth.Accounts) != 1 || auth.Accounts[0].Label != "work" ||
		auth.Accounts[0].Active == nil || !*auth.Accounts[0].Active {
		t.Fatalf("auth/status = %+v, %v", auth, err)
	}
	if err := conn.UnstableMessageMcp(ctx, acp.UnstableMessageMcpNotification{ServerId: "go-mcp", RequestId: "go-req-1", Method: "notifications/cancelled"}); err != nil {
		t.Fatalf("mcp/message: %v", err)
	}
	resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(sid), Prompt: []acp.ContentBlock{acp.TextBlock("go")}})
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", resp, err)
	}

	// What the TypeScript agent received, as its schema parsed it.
	raw, _ := json.Marshal(resp.Meta)
	var ts struct {
		Seen    map[string]map[string]any `json:"seen"`
		Results map[string]map[string]any `json:"results"`
	}
	if err := json.Unmarshal(raw, &ts); err != nil {
		t.Fatal(err)
	}
	wantSeen := map[string]map[string]any{
		"session/delete":    {"sessionId": "old-1"},
		"session/archive":   {"sessionId": sid},
		"session/unarchive": {"sessionId": sid},
		"session/status":    {"sessionId": sid},
		"session/set_title": {"sessionId": sid, "title": "Explore"},
		"auth/status":       {},
		"mcp/message":       {"serverId": "go-mcp", "requestId": "go-req-1", "method": "notifications/cancelled"},
		"$/cancel_request":  {"title": "hold", "code": float64(-32800)},
	}
	for m, want := range wantSeen {
		if got := ts.Seen[m]; !reflect.DeepEqual(got, want) {
			t.Errorf("TypeScript agent got %s %v, want %v", m, got, want)
		}
	}
	caps, _ := ts.Seen["initialize"]["clientCapabilities"].(map[string]any)
	if _, ok := caps["plan"]; !ok {
		t.Errorf("clientCapabilities as the TypeScript agent saw them lack plan: %v", caps)
	}
	if _, ok := caps["planCapabilities"]; ok {
		t.Errorf("clientCapabilities still carry planCapabilities: %v", caps)
	}
	if sp, _ := ts.Seen["session/new"]["systemPrompt"].(map[string]any); sp["mode"] != "append" {
		t.Errorf("systemPrompt as the TypeScript agent saw it = %v", ts.Seen["session/new"]["systemPrompt"])
	}
	if r := ts.Results["elicitation/create"]; r["action"] != "accept" || !reflect.DeepEqual(r["content"], map[string]any{"name": "gopher"}) {
		t.Errorf("elicitation result as the TypeScript agent saw it = %v", r)
	}
	if r := ts.Results["mcp/message"]; !reflect.DeepEqual(r, map[string]any{"tools": []any{map[string]any{"name": "grep"}}}) {
		t.Errorf("mcp/message result as the TypeScript agent saw it = %v", r)
	}

	// What the Go client received from the TypeScript agent, typed.
	client.mu.Lock()
	defer client.mu.Unlock()
	if e := client.elicitation; e == nil || e.Form == nil || e.Form.Message != "Your name?" || e.Form.SessionId != "ts-next-1" || e.Form.RequestedSchema.Required[0] != "name" {
		t.Errorf("elicitation/create = %+v", e)
	}
	if client.completed == nil || client.completed.ElicitationId != "ts-elicit-1" {
		t.Errorf("elicitation/complete = %+v", client.completed)
	}
	if client.authUpdate == nil || client.authUpdate.State != acp.UnstableAuthStateUnauthenticated {
		t.Errorf("auth/status_update = %+v", client.authUpdate)
	}
	if m := client.mcp; m == nil || m.ServerId != "ts-mcp" || m.RequestId != "ts-req-1" || m.Method != "tools/list" || m.Params["cursor"] != "c1" {
		t.Errorf("mcp/message = %+v", m)
	}
	u := client.updates
	if len(u) != 5 {
		t.Fatalf("got %d updates, want 5: %+v", len(u), u)
	}
	if n := u[0].Notice; n == nil || n.Severity != acp.NoticeSeverityWarning || n.Title != "Heads up" || n.Description == nil || *n.Description != "disk almost full" {
		t.Errorf("notice = %+v", u[0])
	}
	if c := u[1].CompactionUpdate; c == nil || c.CompactionId != "ts-comp-1" || c.Status != acp.CompactionStatusInProgress {
		t.Errorf("compaction_update = %+v", u[1])
	}
	if c := u[2].CompactionSummaryChunk; c == nil || c.Content.Text == nil || c.Content.Text.Text != "summary so far" {
		t.Errorf("compaction_summary_chunk = %+v", u[2])
	}
	if c := u[3].CompactionUpdate; c == nil || c.Status != acp.CompactionStatusCompleted || len(c.Summary) != 1 || c.Summary[0].Text.Text != "the summary" {
		t.Errorf("compaction_update completed = %+v", u[3])
	}
	if c := u[4].UsageUpdate; c == nil || c.Used != 1200 || c.Size != 200000 || c.Cost == nil || c.Cost.Amount != 0.25 || c.Cost.Currency != "USD" {
		t.Errorf("usage_update = %+v", u[4])
	}
}

// TestTSClientNextProtocol: the official TypeScript SDK's client calls every
// newer client-to-agent method on a Go agent on our SDK
// (internal/peeragent/cmd/nextagent, which checks each typed value), and
// receives, validated by its own schema, every newer agent-to-client method
// and session update the Go agent sends.
func TestTSClientNextProtocol(t *testing.T) {
	dir := tsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "nextagent")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kdlbs/acp-go-sdk/conformance/internal/peeragent/cmd/nextagent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nextagent: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, "node", "client_next.mjs", bin)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ts client: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		SessionID string                    `json:"sessionId"`
		Results   map[string]map[string]any `json:"results"`
		Seen      struct {
			Updates           []map[string]any `json:"updates"`
			ElicitationCreate map[string]any   `json:"elicitation/create"`
			ElicitationDone   map[string]any   `json:"elicitation/complete"`
			AuthStatusUpdate  map[string]any   `json:"auth/status_update"`
			McpMessage        map[string]any   `json:"mcp/message"`
		} `json:"seen"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("ts client output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if got.SessionID != "go-next-1" {
		t.Fatalf("sessionId = %q", got.SessionID)
	}

	// The Go agent's side: its typed checks and what it decoded.
	meta, _ := got.Results["prompt"]["_meta"].(map[string]any)
	if got.Results["prompt"]["stopReason"] != "end_turn" || meta == nil {
		t.Fatalf("prompt result = %v", got.Results["prompt"])
	}
	if problems, _ := meta["problems"].([]any); len(problems) != 0 {
		t.Errorf("the Go agent's checks failed: %v", problems)
	}
	seen, _ := meta["seen"].(map[string]any)
	for _, m := range []string{"initialize", "session/new", "session/delete", "session/archive", "session/unarchive", "session/status", "session/set_title", "auth/status", "mcp/message", "$/cancel_request"} {
		if _, ok := seen[m]; !ok {
			t.Errorf("the Go agent never handled %s (seen %v)", m, seen)
		}
	}

	// The TypeScript client's side: the Go agent's results and calls, as
	// its schema parsed them.
	caps, _ := got.Results["initialize"]["agentCapabilities"].(map[string]any)
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	for _, k := range []string{"delete", "archive", "status", "title"} {
		if _, ok := sc[k]; !ok {
			t.Errorf("sessionCapabilities lack %s: %v", k, sc)
		}
	}
	if c := got.Results["$/cancel_request"]; c["code"] != float64(-32800) {
		t.Errorf("the held session/set_title, cancelled by the TypeScript client, ended with %v, want the Go agent's -32800", c)
	}
	if c, _ := seen["$/cancel_request"].(map[string]any); c["err"] != context.Canceled.Error() {
		t.Errorf("the Go agent's handler of the held call saw %v, want its context cancelled", seen["$/cancel_request"])
	}
	if got.Results["session/status"]["status"] != "open" {
		t.Errorf("session/status = %v", got.Results["session/status"])
	}
	if a := got.Results["auth/status"]; a["state"] != "authenticated" || !reflect.DeepEqual(a["accounts"], []any{map[string]any{"label": "personal", "name": "Dev"}}) {
		t.Errorf("auth/status = %v", a)
	}
	if e := got.Seen.ElicitationCreate; e["mode"] != "form" || e["message"] != "Favourite color?" {
		t.Errorf("elicitation/create as the TypeScript client got it = %v", e)
	}
	if got.Seen.ElicitationDone["elicitationId"] != "go-elicit-1" {
		t.Errorf("elicitation/complete = %v", got.Seen.ElicitationDone)
	}
	if a := got.Seen.AuthStatusUpdate; a["state"] != "authenticated" || !reflect.DeepEqual(a["accounts"], []any{map[string]any{"label": "work"}}) {
		t.Errorf("auth/status_update = %v", a)
	}
	if m := got.Seen.McpMessage; m["serverId"] != "go-mcp" || m["requestId"] != "go-req-1" || m["method"] != "tools/call" {
		t.Errorf("mcp/message = %v", m)
	}
	var kinds []string
	for _, u := range got.Seen.Updates {
		kinds = append(kinds, fmt.Sprint(u["sessionUpdate"]))
	}
	want := []string{"notice", "compaction_update", "compaction_summary_chunk", "compaction_update", "usage_update"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("the TypeScript client accepted updates %v, want %v\nstderr:\n%s", kinds, want, stderr.String())
	}
	if u := got.Seen.Updates[0]; u["severity"] != "info" || u["description"] != "rate limited" {
		t.Errorf("notice = %v", u)
	}
	if u := got.Seen.Updates[3]; u["status"] != "completed" || !reflect.DeepEqual(u["summary"], []any{map[string]any{"type": "text", "text": "done"}}) {
		t.Errorf("compaction_update = %v", u)
	}
	if stderr.Len() > 0 {
		t.Logf("ts client stderr:\n%s", stderr.String())
	}
}
