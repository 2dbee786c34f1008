package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// overCapCapture writes a capture with a legacy-form card whose prompt is
// prompt bytes long (over the adapter's 1 MiB card-string cap) and a
// child session whose answer is answer bytes long (over the 256 KiB cap
// of a child's answer).
func overCapCapture(t *testing.T, prompt, answer int) string {
	t.Helper()
	update := func(session string, u map[string]any) string {
		b, err := json.Marshal(map[string]any{"from": "agent", "msg": map[string]any{"jsonrpc": "2.0", "method": "session/update",
			"params": map[string]any{"sessionId": session, "update": u}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	lines := []string{
		`{"capture":{"version":1,"agent":"claude"}}`,
		`{"from":"client","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}}}`,
		`{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"1"},"authMethods":[]}}}`,
		`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}}`,
		`{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}}`,
		`{"from":"client","msg":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}}}`,
		update("s1", map[string]any{"sessionUpdate": "tool_call", "toolCallId": "big", "title": "Big", "kind": "think", "status": "in_progress",
			"rawInput": map[string]any{"description": "Big", "prompt": strings.Repeat("p", prompt), "subagent_type": "general-purpose"},
			"_meta":    map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}}}),
		update("s1", map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "big", "status": "completed",
			"_meta": map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}}}),
		update("s1", map[string]any{"sessionUpdate": "subagent_update", "sessionId": "child", "title": "Long", "description": "general-purpose", "state": map[string]any{"state": "running"}}),
		update("child", map[string]any{"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": map[string]any{"type": "text", "text": strings.Repeat("a", answer/2)}}),
		update("child", map[string]any{"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": map[string]any{"type": "text", "text": strings.Repeat("b", answer-answer/2)}}),
		update("s1", map[string]any{"sessionUpdate": "subagent_update", "sessionId": "child", "state": map[string]any{"state": "idle", "stopReason": "end_turn"}}),
		`{"from":"agent","msg":{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}}`,
	}
	path := filepath.Join(t.TempDir(), "overcap.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Text over the adapter's caps is cut, and marked so with its real
// length: in --json (prompt_bytes, result_bytes) and in the store
// (SubagentTexts' lengths, so the web view shows it truncated), never as
// a whole text of the cut length.
func TestTextOverTheCapsIsMarkedTruncated(t *testing.T) {
	const prompt, answer = 3 << 19, 300 << 10 // 1.5 MiB, 300 KiB
	capture := overCapCapture(t, prompt, answer)
	db := filepath.Join(t.TempDir(), "scope.db")
	code, out, errOut := acpscope(t, "", "replay", "--json", "--db", db, capture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lengths := map[string][2]float64{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var c struct {
			ToolCallID string `json:"tool_call_id"`
			Normalized struct {
				Task map[string]any `json:"subagent_task"`
			} `json:"normalized"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		p, _ := c.Normalized.Task["prompt_bytes"].(float64)
		r, _ := c.Normalized.Task["result_bytes"].(float64)
		lengths[c.ToolCallID] = [2]float64{p, r}
	}
	if got := lengths["big"]; got[0] != prompt {
		t.Errorf("--json: the cut prompt's length is %v, want prompt_bytes %d", got[0], prompt)
	}
	if got := lengths["child"]; got[1] != answer {
		t.Errorf("--json: the cut answer's length is %v, want result_bytes %d", got[1], answer)
	}

	s, err := persistence.OpenReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.ListBySession(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range rows {
		texts, err := s.SubagentTexts(t.Context(), "s1", r.AgentExecutionID, r.ToolCallID)
		if err != nil {
			t.Fatal(err)
		}
		desc := fmt.Sprintf("%s: prompt %d of %d bytes stored, result %d of %d", r.ToolCallID,
			lenOf(texts.Prompt), texts.PromptBytes, lenOf(texts.ResultText), texts.ResultBytes)
		switch r.ToolCallID {
		case "big":
			seen++
			if !texts.PromptTruncated() || texts.PromptBytes != prompt {
				t.Errorf("%s; want it truncated, of %d", desc, prompt)
			}
		case "child":
			seen++
			if !texts.ResultTruncated() || texts.ResultBytes != answer {
				t.Errorf("%s; want it truncated, of %d", desc, answer)
			}
		}
		// What the page's card details are served from.
		page, err := web.LoadCardTexts(t.Context(), s, "s1", r.AgentExecutionID, r.ToolCallID)
		if err != nil {
			t.Fatal(err)
		}
		if page.PromptTruncated != texts.PromptTruncated() || page.ResultTruncated != texts.ResultTruncated() {
			t.Errorf("%s: the page's card texts say prompt truncated %v, result truncated %v", r.ToolCallID, page.PromptTruncated, page.ResultTruncated)
		}
	}
	if seen != 2 {
		t.Fatalf("stored %d of the 2 cards: %+v", seen, rows)
	}
}

func lenOf(s *string) int {
	if s == nil {
		return -1
	}
	return len(*s)
}
