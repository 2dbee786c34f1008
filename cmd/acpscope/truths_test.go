package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Every card truth of issue 23 reaches --json and the store alike: a
// failure's reason, a child run again (each answer kept), a nested child
// naming its parent card, an unknown child (its own status, neither
// running nor finished) and a session reference (stored on the card of
// the referenced child). The capture is synthetic
// (testdata/subagent_truths.jsonl), built from the frames the issue
// describes for claude-agent-acp 0.101.0.
func TestCardTruthsReachJSONAndTheStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scope.db")
	code, out, errOut := acpscope(t, "", "replay", "--json", "--db", db, filepath.Join("testdata", "subagent_truths.jsonl"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		lines[m["tool_call_id"].(string)] = m
	}
	task := func(id string) map[string]any {
		return lines[id]["normalized"].(map[string]any)["subagent_task"].(map[string]any)
	}
	if l := lines["failing"]; l["tool_status"] != "error" || task("failing")["error_message"] != "Agent terminated early due to an API error: 400" {
		t.Errorf("failing: %v", l)
	}
	if got := task("again"); got["result_text"] != "second answer" || len(got["earlier_results"].([]any)) != 1 {
		t.Errorf("again: %v", got)
	}
	if l := lines["nested"]; l["session_id"] != "again" || l["parent_tool_call_id"] != "again" || l["parent_session_id"] != "s1" {
		t.Errorf("nested: %v", l)
	}
	if l := lines["lost"]; l["tool_status"] != "unknown" || slices.Index(anyStrings(l["referenced_by"]), "t_stop") < 0 {
		t.Errorf("lost: %v", l)
	}

	s, err := persistence.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	row := func(session, tc string) persistence.SubagentContext {
		rows, err := s.ListBySession(context.Background(), session)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.ToolCallID == tc {
				return r
			}
		}
		t.Fatalf("no row %s/%s", session, tc)
		return persistence.SubagentContext{}
	}
	facts := func(session, tc string) persistence.CardFacts {
		r := row(session, tc)
		f, err := s.SubagentFacts(context.Background(), session, r.AgentExecutionID, tc)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := facts("s1", "failing"); f.ErrorMessage != "Agent terminated early due to an API error: 400" {
		t.Errorf("stored failing facts %+v", f)
	}
	if f := facts("s1", "again"); !slices.Equal(f.EarlierResults, []string{"first answer"}) {
		t.Errorf("stored again facts %+v", f)
	}
	if f := facts("again", "nested"); f.ParentSessionID != "s1" {
		t.Errorf("stored nested facts %+v", f)
	}
	if r := row("s1", "lost"); r.ToolStatus == nil || *r.ToolStatus != "unknown" || r.SettledAt != nil {
		t.Errorf("stored unknown row: %v settled %v", r.ToolStatus, r.SettledAt)
	}
	// The session reference --json lists is stored on the referenced card.
	if f := facts("s1", "lost"); !slices.Equal(f.ReferencedBy, anyStrings(lines["lost"]["referenced_by"])) {
		t.Errorf("stored lost references %q, --json %v", f.ReferencedBy, lines["lost"]["referenced_by"])
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// The live capture of Claude 0.101.0's /clear while a background child
// runs (conformance/agents: sessions-clear-running) stores the child as
// it was last reported, idle without a stop reason: tool status unknown,
// never settled, not open, on both engines; sessions lists the session
// as unknown, not open.
func TestClearWhileRunningIsStoredUnknown(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { clearWhileRunningStored(t, filepath.Join(t.TempDir(), "scope.db")) })
	t.Run("postgres", func(t *testing.T) { clearWhileRunningStored(t, postgresDSN(t)) })
}

func clearWhileRunningStored(t *testing.T, db string) {
	capture := filepath.Join(agentCaptures, "claude-0.101.0", "sessions-clear-running.jsonl")
	code, out, errOut := acpscope(t, "", "replay", "--json", "--subagents", "--db", db, capture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var card struct {
		SessionID  string `json:"session_id"`
		ToolStatus string `json:"tool_status"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &card); err != nil || card.ToolStatus != "unknown" {
		t.Fatalf("--json %s (%v), want one unknown card", out, err)
	}
	s, err := persistence.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.ListBySession(context.Background(), card.SessionID)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %+v %v, want one", rows, err)
	}
	if r := rows[0]; r.ToolStatus == nil || *r.ToolStatus != "unknown" || r.SettledAt != nil {
		t.Errorf("stored %v settled %v, want unknown, never settled", r.ToolStatus, r.SettledAt)
	}
	sum, ok, err := s.Session(context.Background(), card.SessionID)
	if err != nil || !ok || sum.Open != 0 || sum.Unknown != 1 || sum.Status != persistence.SessionUnknown {
		t.Errorf("session %+v %v, want status unknown with 1 unknown and 0 open cards", sum, err)
	}
}
