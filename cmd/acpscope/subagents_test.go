package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
)

// subagentLine mirrors the documented keys of `subagents --json`.
type subagentLine struct {
	SessionID        string     `json:"session_id"`
	ToolCallID       string     `json:"tool_call_id"`
	ParentToolCallID *string    `json:"parent_tool_call_id"`
	AgentExecutionID string     `json:"agent_execution_id"`
	TurnID           *string    `json:"turn_id"`
	SubagentType     *string    `json:"subagent_type"`
	Description      *string    `json:"description"`
	AgentID          *string    `json:"agent_id"`
	ChildSessionID   *string    `json:"child_session_id"`
	Model            *string    `json:"model"`
	AgentStatus      *string    `json:"agent_status"`
	ToolStatus       *string    `json:"tool_status"`
	IsAsync          bool       `json:"is_async"`
	TotalTokens      *int64     `json:"total_tokens"`
	ToolUseCount     *int64     `json:"tool_use_count"`
	DurationMs       *int64     `json:"duration_ms"`
	ObservedAt       time.Time  `json:"observed_at"`
	SettledAt        *time.Time `json:"settled_at"`
	ResultText       *string    `json:"result_text"`
	ResultBytes      int64      `json:"result_bytes"`
	ResultTruncated  bool       `json:"result_truncated"`
	ErrorMessage     *string    `json:"error_message"`
}

// subagentsJSON runs `subagents --json` and decodes its lines strictly.
func subagentsJSON(t *testing.T, db, session string) (map[string]subagentLine, string) {
	t.Helper()
	code, out, errOut := acpscope(t, "", "subagents", "--json", "--db", db, "--session", session)
	if code != exitOK {
		t.Fatalf("subagents --json: exit %d: %s", code, errOut)
	}
	got := map[string]subagentLine{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		var c subagentLine
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got[c.ToolCallID] = c
	}
	return got, out
}

// `subagents` shows each card's result: a RESULT column (its first line,
// shortened) in the table, and the whole stored result in --json, one
// object per card.
func TestSubagentsShowTheResult(t *testing.T) {
	db := replayDemo(t)
	code, out, errOut := acpscope(t, "", "subagents", "--db", db, "--session", "cl-91b0")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "RESULT") {
		t.Fatalf("no RESULT column:\n%s", out)
	}
	if !strings.Contains(out, "VERDICT: the retry loop shares a timer") {
		t.Fatalf("the table lacks the result:\n%s", out)
	}
	got, _ := subagentsJSON(t, db, "cl-91b0")
	a := got["toolu_A"]
	if len(got) != 2 || a.SessionID != "cl-91b0" || a.ResultText == nil ||
		*a.ResultText != "VERDICT: the retry loop shares a timer across goroutines; fix in retry.go:88." ||
		a.ResultTruncated || a.ResultBytes != int64(len(*a.ResultText)) || a.ToolStatus == nil || *a.ToolStatus != "complete" {
		t.Fatalf("--json: %+v", got)
	}
}

// Agent text reaches neither the table nor --json with a control or
// bidirectional character: the table shows U+FFFD, --json escapes them
// (the value unchanged for a JSON reader).
func TestSubagentsSanitiseAgentText(t *testing.T) {
	const hostile = "\x1b]0;pwned\x07answer\u202eevil\x1b[2J"
	card := map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t\x1b[31m1", "title": "T", "kind": "think", "status": "in_progress",
		"rawInput": map[string]any{"description": "desc\u2066x", "prompt": "p", "subagent_type": "general-purpose"},
		"_meta":    map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}}}
	done := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t\x1b[31m1", "status": "completed",
		"_meta": map[string]any{"claudeCode": map[string]any{"toolName": "Agent", "toolResponse": map[string]any{
			"status": "completed", "content": []any{map[string]any{"type": "text", "text": hostile}}}}}}
	capture := filepath.Join(t.TempDir(), "hostile.jsonl")
	lines := []string{
		`{"capture":{"version":1,"agent":"claude"}}`,
		`{"from":"client","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}`,
		`{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"1"},"authMethods":[]}}}`,
		`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}}`,
		`{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}}`,
		`{"from":"client","msg":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}}}`,
	}
	for _, u := range []map[string]any{card, done} {
		b, _ := json.Marshal(map[string]any{"from": "agent", "msg": map[string]any{"jsonrpc": "2.0", "method": "session/update",
			"params": map[string]any{"sessionId": "s1", "update": u}}})
		lines = append(lines, string(b))
	}
	lines = append(lines, `{"from":"agent","msg":{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}}`)
	if err := os.WriteFile(capture, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "scope.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", db, capture); code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	code, table, errOut := acpscope(t, "", "subagents", "--db", db, "--session", "s1")
	if code != exitOK || !strings.Contains(table, "answer\uFFFDevil") {
		t.Fatalf("exit %d, the table lacks the sanitised result: %s\n%s", code, errOut, table)
	}
	got, out := subagentsJSON(t, db, "s1")
	for what, text := range map[string]string{"table": table, "--json": out} {
		if i := strings.IndexFunc(strings.ReplaceAll(text, "\n", ""), safetext.Forbidden); i >= 0 {
			t.Errorf("%s carries a forbidden rune at %d: %q", what, i, text)
		}
	}
	if c, ok := got["t\x1b[31m1"]; !ok || c.ResultText == nil || *c.ResultText != hostile {
		t.Fatalf("--json does not keep the value: %+v", got)
	}
}
