package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// The methods and updates of the newer protocol (TypeScript SDK 2.4.0), typed
// on both sides: a Go client and a Go agent over a pipe.

// nextAgent implements Agent and every optional handler of the newer protocol;
// each handler reports the typed params it got on got.
type nextAgent struct {
	*testAgent
	got chan any
}

func (a *nextAgent) NewSession(ctx context.Context, p NewSessionRequest) (NewSessionResponse, error) {
	a.got <- p
	return NewSessionResponse{SessionId: "s1"}, nil
}
func (a *nextAgent) DeleteSession(ctx context.Context, p DeleteSessionRequest) (DeleteSessionResponse, error) {
	a.got <- p
	return DeleteSessionResponse{Meta: map[string]any{"deleted": true}}, nil
}
func (a *nextAgent) UnstableArchiveSession(ctx context.Context, p UnstableArchiveSessionRequest) (UnstableArchiveSessionResponse, error) {
	a.got <- p
	return UnstableArchiveSessionResponse{Meta: map[string]any{"archived": true}}, nil
}
func (a *nextAgent) UnstableUnarchiveSession(ctx context.Context, p UnstableUnarchiveSessionRequest) (UnstableUnarchiveSessionResponse, error) {
	a.got <- p
	return UnstableUnarchiveSessionResponse{}, nil
}
func (a *nextAgent) UnstableSessionStatus(ctx context.Context, p UnstableSessionStatusRequest) (UnstableSessionStatusResponse, error) {
	a.got <- p
	return UnstableSessionStatusResponse{Status: UnstableSessionStatusSaved}, nil
}
func (a *nextAgent) UnstableSetSessionTitle(ctx context.Context, p UnstableSetSessionTitleRequest) (UnstableSetSessionTitleResponse, error) {
	a.got <- p
	return UnstableSetSessionTitleResponse{}, nil
}
func (a *nextAgent) UnstableAuthStatus(ctx context.Context, p UnstableAuthStatusRequest) (UnstableAuthStatusResponse, error) {
	a.got <- p
	return UnstableAuthStatusResponse{State: UnstableAuthStateAuthenticated, Accounts: []UnstableAuthAccount{{Label: "work"}}}, nil
}
func (a *nextAgent) UnstableMessageMcp(ctx context.Context, p UnstableMessageMcpNotification) error {
	a.got <- p
	return nil
}

// nextClient implements Client and every optional handler of the newer protocol.
type nextClient struct {
	*testClient
	got chan any
}

func (c *nextClient) SessionUpdate(ctx context.Context, n SessionNotification) error {
	c.got <- n
	return nil
}
func (c *nextClient) CreateElicitation(ctx context.Context, p CreateElicitationRequest) (CreateElicitationResponse, error) {
	c.got <- p
	return CreateElicitationResponse{Accept: &CreateElicitationAccept{Action: "accept", Content: map[string]any{"name": "go"}}}, nil
}
func (c *nextClient) CompleteElicitation(ctx context.Context, p CompleteElicitationNotification) error {
	c.got <- p
	return nil
}
func (c *nextClient) UnstableAuthStatusUpdate(ctx context.Context, p UnstableAuthStatusUpdateNotification) error {
	c.got <- p
	return nil
}
func (c *nextClient) UnstableMessageMcp(ctx context.Context, p UnstableMessageMcpRequest) (UnstableMessageMcpResponse, error) {
	c.got <- p
	return UnstableMessageMcpResponse(map[string]any{"tools": []any{}}), nil
}

// sidePair connects client and agent over two pipes.
func sidePair(t *testing.T, client Client, agent Agent) (*ClientSideConnection, *AgentSideConnection) {
	t.Helper()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	cs := NewClientSideConnection(client, c2aW, a2cR)
	as := NewAgentSideConnection(agent, a2cW, c2aR)
	t.Cleanup(func() {
		_ = c2aW.Close()
		_ = a2cW.Close()
	})
	return cs, as
}

// recv takes the next value a handler reported.
func recv(t *testing.T, ch chan any) any {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctxGuard(t).Done():
		t.Fatal("handler not called")
		return nil
	}
}

func ctxGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

func TestNextProtocolClientToAgent(t *testing.T) {
	agent := &nextAgent{testAgent: newTestAgent(), got: make(chan any, 16)}
	cs, _ := sidePair(t, &nextClient{testClient: newTestClient(), got: make(chan any, 16)}, agent)
	ctx := ctxGuard(t)

	// systemPrompt on session/new, and the renamed plan capability.
	sp := &UnstableSystemPrompt{Mode: UnstableSystemPromptModeAppend, Content: []ContentBlock{TextBlock("be brief")}}
	if _, err := cs.NewSession(ctx, NewSessionRequest{Cwd: "/w", McpServers: []McpServer{}, SystemPrompt: sp}); err != nil {
		t.Fatal(err)
	}
	ns := recv(t, agent.got).(NewSessionRequest)
	if ns.SystemPrompt == nil || ns.SystemPrompt.Mode != UnstableSystemPromptModeAppend || ns.SystemPrompt.Content[0].Text.Text != "be brief" {
		t.Fatalf("systemPrompt = %+v", ns.SystemPrompt)
	}

	if resp, err := cs.DeleteSession(ctx, DeleteSessionRequest{SessionId: "s1"}); err != nil || resp.Meta["deleted"] != true {
		t.Fatalf("DeleteSession = %+v, %v", resp, err)
	}
	if p := recv(t, agent.got).(DeleteSessionRequest); p.SessionId != "s1" {
		t.Fatalf("delete got %+v", p)
	}
	// The v0.13.5 outbound name still works.
	if _, err := cs.UnstableDeleteSession(ctx, UnstableDeleteSessionRequest{SessionId: "s2"}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, agent.got).(DeleteSessionRequest); p.SessionId != "s2" {
		t.Fatalf("delete got %+v", p)
	}
	if resp, err := cs.UnstableArchiveSession(ctx, UnstableArchiveSessionRequest{SessionId: "s1"}); err != nil || resp.Meta["archived"] != true {
		t.Fatalf("archive = %+v, %v", resp, err)
	}
	if p := recv(t, agent.got).(UnstableArchiveSessionRequest); p.SessionId != "s1" {
		t.Fatalf("archive got %+v", p)
	}
	if _, err := cs.UnstableUnarchiveSession(ctx, UnstableUnarchiveSessionRequest{SessionId: "s1"}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, agent.got).(UnstableUnarchiveSessionRequest); p.SessionId != "s1" {
		t.Fatalf("unarchive got %+v", p)
	}
	if resp, err := cs.UnstableSessionStatus(ctx, UnstableSessionStatusRequest{SessionId: "s1"}); err != nil || resp.Status != UnstableSessionStatusSaved {
		t.Fatalf("status = %+v, %v", resp, err)
	}
	recv(t, agent.got)
	if _, err := cs.UnstableSetSessionTitle(ctx, UnstableSetSessionTitleRequest{SessionId: "s1", Title: "Plan"}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, agent.got).(UnstableSetSessionTitleRequest); p.Title != "Plan" {
		t.Fatalf("set_title got %+v", p)
	}
	if resp, err := cs.UnstableAuthStatus(ctx, UnstableAuthStatusRequest{}); err != nil || resp.State != UnstableAuthStateAuthenticated || resp.Accounts[0].Label != "work" {
		t.Fatalf("auth/status = %+v, %v", resp, err)
	}
	recv(t, agent.got)
	if err := cs.UnstableMessageMcp(ctx, UnstableMessageMcpNotification{ServerId: "srv", RequestId: "r1", Method: "notifications/progress"}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, agent.got).(UnstableMessageMcpNotification); p.ServerId != "srv" || p.RequestId != "r1" || p.Method != "notifications/progress" {
		t.Fatalf("mcp/message got %+v", p)
	}
}

func TestNextProtocolAgentToClient(t *testing.T) {
	client := &nextClient{testClient: newTestClient(), got: make(chan any, 16)}
	_, as := sidePair(t, client, &nextAgent{testAgent: newTestAgent(), got: make(chan any, 16)})
	ctx := ctxGuard(t)

	req := NewCreateElicitationRequestForm(ElicitationSchema{Properties: map[string]any{"name": map[string]any{"type": "string"}}})
	req.Form.Message = "Your name?"
	req.Form.SessionId = "s1"
	resp, err := as.CreateElicitation(ctx, req)
	if err != nil || resp.Accept == nil || resp.Accept.Content["name"] != "go" {
		t.Fatalf("CreateElicitation = %+v, %v", resp, err)
	}
	if p := recv(t, client.got).(CreateElicitationRequest); p.Form == nil || p.Form.Message != "Your name?" || p.Form.SessionId != "s1" {
		t.Fatalf("elicitation got %+v", p)
	}
	if err := as.CompleteElicitation(ctx, CompleteElicitationNotification{ElicitationId: "e1"}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, client.got).(CompleteElicitationNotification); p.ElicitationId != "e1" {
		t.Fatalf("complete got %+v", p)
	}
	if err := as.UnstableAuthStatusUpdate(ctx, UnstableAuthStatusUpdateNotification{State: UnstableAuthStateUnauthenticated}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, client.got).(UnstableAuthStatusUpdateNotification); p.State != UnstableAuthStateUnauthenticated {
		t.Fatalf("auth/status_update got %+v", p)
	}
	mresp, err := as.UnstableMessageMcp(ctx, UnstableMessageMcpRequest{ServerId: "srv", RequestId: "r2", Method: "tools/list"})
	if err != nil || !reflect.DeepEqual(mresp, UnstableMessageMcpResponse(map[string]any{"tools": []any{}})) {
		t.Fatalf("mcp/message = %#v, %v", mresp, err)
	}
	if p := recv(t, client.got).(UnstableMessageMcpRequest); p.ServerId != "srv" || p.Method != "tools/list" {
		t.Fatalf("mcp/message got %+v", p)
	}

	desc := "disk almost full"
	updates := []SessionUpdate{
		{Notice: &SessionUpdateNotice{Severity: NoticeSeverityWarning, Title: "Heads up", Description: &desc}},
		{CompactionUpdate: &SessionCompactionUpdate{CompactionId: "c1", Status: CompactionStatusCompleted, Summary: []ContentBlock{TextBlock("sum")}}},
		{CompactionSummaryChunk: &SessionUpdateCompactionSummaryChunk{CompactionId: "c1", Content: TextBlock("chunk")}},
		{UsageUpdate: &SessionUsageUpdate{Used: 10, Size: 100}},
	}
	for _, u := range updates {
		if err := as.SessionUpdate(ctx, SessionNotification{SessionId: "s1", Update: u}); err != nil {
			t.Fatal(err)
		}
	}
	n := recv(t, client.got).(SessionNotification).Update
	if n.Notice == nil || n.Notice.Severity != NoticeSeverityWarning || *n.Notice.Description != desc || n.Notice.SessionUpdate != "notice" {
		t.Fatalf("notice = %+v", n.Notice)
	}
	n = recv(t, client.got).(SessionNotification).Update
	if n.CompactionUpdate == nil || n.CompactionUpdate.Status != CompactionStatusCompleted || n.CompactionUpdate.Summary[0].Text.Text != "sum" {
		t.Fatalf("compaction_update = %+v", n.CompactionUpdate)
	}
	n = recv(t, client.got).(SessionNotification).Update
	if n.CompactionSummaryChunk == nil || n.CompactionSummaryChunk.Content.Text.Text != "chunk" {
		t.Fatalf("compaction_summary_chunk = %+v", n.CompactionSummaryChunk)
	}
	n = recv(t, client.got).(SessionNotification).Update
	if n.UsageUpdate == nil || n.UsageUpdate.Used != 10 || n.UsageUpdate.Size != 100 {
		t.Fatalf("usage_update = %+v", n.UsageUpdate)
	}
}

// legacyDeleter implements only the v0.13.5 name of session/delete.
type legacyDeleter struct {
	*testAgent
	got chan any
}

// DeleteSession with another signature hides testAgent's.
func (*legacyDeleter) DeleteSession() {}

func (a *legacyDeleter) UnstableDeleteSession(ctx context.Context, p UnstableDeleteSessionRequest) (UnstableDeleteSessionResponse, error) {
	a.got <- p
	return UnstableDeleteSessionResponse{}, nil
}

// plainAgent implements none of the optional methods.
type plainAgent struct{ *testAgent }

func (plainAgent) DeleteSession() {} // a different signature is not an implementation

func TestNextProtocolOptionalHandlers(t *testing.T) {
	ctx := ctxGuard(t)
	legacy := &legacyDeleter{testAgent: newTestAgent(), got: make(chan any, 1)}
	cs, _ := sidePair(t, newTestClient(), legacy)
	if _, err := cs.DeleteSession(ctx, DeleteSessionRequest{SessionId: "s9"}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, legacy.got).(DeleteSessionRequest); p.SessionId != "s9" {
		t.Fatalf("legacy delete got %+v", p)
	}

	// A peer without the handlers answers -32601, as with v0.13.5.
	cs, _ = sidePair(t, newTestClient(), plainAgent{newTestAgent()})
	for name, call := range map[string]func() error{
		"session/delete": func() error { _, err := cs.DeleteSession(ctx, DeleteSessionRequest{SessionId: "s"}); return err },
		"session/archive": func() error {
			_, err := cs.UnstableArchiveSession(ctx, UnstableArchiveSessionRequest{SessionId: "s"})
			return err
		},
		"session/status": func() error {
			_, err := cs.UnstableSessionStatus(ctx, UnstableSessionStatusRequest{SessionId: "s"})
			return err
		},
		"auth/status": func() error { _, err := cs.UnstableAuthStatus(ctx, UnstableAuthStatusRequest{}); return err },
	} {
		var re *RequestError
		if err := call(); !errors.As(err, &re) || re.Code != -32601 {
			t.Errorf("%s without a handler: %v, want -32601", name, err)
		}
	}

	// On the client side an unimplemented new method still reaches the
	// ExtensionMethodHandler, as an unknown method did before.
	ext := extClient{newTestClient()}
	_, as := sidePair(t, ext, newTestAgent())
	_, err := as.UnstableMessageMcp(ctx, UnstableMessageMcpRequest{ServerId: "srv", RequestId: "r", Method: "ping"})
	waitSeen(t, ext.testClient, "mcp/message")
	var re *RequestError
	if !errors.As(err, &re) || re.Code != -32601 {
		t.Fatalf("mcp/message through the extension handler: %v", err)
	}
}

// Renamed wire fields: both spellings decode (the current one wins when both
// are present), only the current one is written; on the one-pass decoder
// and on the general path (forced by a case-folded key).
func TestRenamedWireFields(t *testing.T) {
	type tc struct {
		name    string
		newV    func() any
		current string
		legacy  string
		get     func(any) string
		extra   string // other members, JSON
	}
	cases := []tc{
		{"ClientCapabilities.plan", func() any { return new(ClientCapabilities) }, "plan", "planCapabilities",
			func(v any) string {
				if p := v.(*ClientCapabilities).PlanCapabilities; p != nil {
					return p.Meta["v"].(string)
				}
				return ""
			}, `"terminal":true`},
		{"PlanFile.planId", func() any { return new(PlanFile) }, "planId", "id", func(v any) string { return string(v.(*PlanFile).Id) }, `"uri":"file:///p"`},
		{"PlanRemoved.planId", func() any { return new(PlanRemoved) }, "planId", "id", func(v any) string { return string(v.(*PlanRemoved).Id) }, `"_meta":{}`},
		{"ProviderInfo.providerId", func() any { return new(UnstableProviderInfo) }, "providerId", "id", func(v any) string { return v.(*UnstableProviderInfo).Id }, `"required":true,"supported":[]`},
		{"SetProviderRequest.providerId", func() any { return new(UnstableSetProviderRequest) }, "providerId", "id", func(v any) string { return v.(*UnstableSetProviderRequest).Id }, `"apiType":"openai","baseUrl":"http://127.0.0.1"`},
		{"DisableProviderRequest.providerId", func() any { return new(UnstableDisableProviderRequest) }, "providerId", "id", func(v any) string { return v.(*UnstableDisableProviderRequest).Id }, `"_meta":{}`},
		{"McpServerAcp.serverId", func() any { return new(UnstableMcpServerAcp) }, "serverId", "id", func(v any) string { return string(v.(*UnstableMcpServerAcp).Id) }, `"name":"n"`},
	}
	val := func(c tc, s string) string {
		if c.current == "plan" {
			return `{"_meta":{"v":"` + s + `"}}`
		}
		return `"` + s + `"`
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, force := range []bool{false, true} {
				// The legacy key in upper case folds to a known key, which
				// sends the one-pass decoder to the general path.
				extra := c.extra
				if force {
					extra += `,"` + strings.ToUpper(c.legacy) + `":0`
				}
				for _, in := range []struct{ json, want string }{
					{`{` + extra + `,"` + c.current + `":` + val(c, "cur") + `}`, "cur"},
					{`{` + extra + `,"` + c.legacy + `":` + val(c, "old") + `}`, "old"},
					{`{"` + c.legacy + `":` + val(c, "old") + `,` + extra + `,"` + c.current + `":` + val(c, "cur") + `}`, "cur"},
					{`{"` + c.current + `":` + val(c, "cur") + `,` + extra + `,"` + c.legacy + `":` + val(c, "old") + `}`, "cur"},
				} {
					v := c.newV()
					if err := json.Unmarshal([]byte(in.json), v); err != nil {
						t.Fatalf("%s: %v", in.json, err)
					}
					if got := c.get(v); got != in.want {
						t.Fatalf("%s: decoded %q, want %q", in.json, got, in.want)
					}
					out, err := json.Marshal(v)
					if err != nil {
						t.Fatal(err)
					}
					var keys map[string]json.RawMessage
					_ = json.Unmarshal(out, &keys)
					if _, ok := keys[c.current]; !ok {
						t.Fatalf("encoded %s lacks %q", out, c.current)
					}
					if _, ok := keys[c.legacy]; ok {
						t.Fatalf("encoded %s still writes %q", out, c.legacy)
					}
				}
			}
		})
	}
}
