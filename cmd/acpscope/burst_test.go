package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// burstUpdates is the size of the capture that acpscope replay once lost
// to a notification queue overflow in one or two runs out of three: 20,000
// updates, 100 to each of 200 subagents.
const (
	burstUpdates = 20000
	burstPer     = 100
	burstCards   = burstUpdates / burstPer
)

// A capture of a 20,000-update burst that acpscope run recorded itself
// replays completely, again and again, with persistence on: every run
// exits 0, prints every card complete (the same cards the run printed) and
// stores every card. Before the SDK's flow control, a replay of such a
// capture closed the connection with a notification queue overflow in one
// or two runs out of three.
func TestReplayOfRecordedBurstLosesNothing(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "burst.jsonl")
	code, live, errOut := acpscope(t, "", "run", "--json", "--no-db", "--prompt", "burst", "--cwd", dir, "--record", rec,
		"--", fakeAgent, "-mode", "burst", "-updates", fmt.Sprint(burstUpdates), "-per", fmt.Sprint(burstPer))
	if code != exitOK {
		t.Fatalf("run exit %d: %s", code, errOut)
	}
	checkBurstCards(t, "run", live)
	for i := range 3 {
		db := filepath.Join(dir, fmt.Sprintf("replay%d.db", i))
		code, out, errOut := acpscope(t, "", "replay", "--json", "--db", db, rec)
		if code != exitOK {
			t.Fatalf("replay %d: exit %d: %s", i, code, errOut)
		}
		if out != live {
			t.Fatalf("replay %d printed other cards than the run", i)
		}
		checkBurstCards(t, fmt.Sprintf("replay %d", i), out)
		code, rows, errOut := acpscope(t, "", "subagents", "--session", "fake-session", "--db", db)
		if code != exitOK {
			t.Fatalf("replay %d: subagents exit %d: %s", i, code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(rows, "\n"), "\n")[1:] // after the header
		if len(lines) != burstCards {
			t.Fatalf("replay %d stored %d subagent rows, want %d", i, len(lines), burstCards)
		}
		for _, l := range lines {
			if f := strings.Fields(l); len(f) < 10 || f[6] != "complete" || f[7] != "completed" || f[10] != fmt.Sprint(burstPer-2) {
				t.Fatalf("replay %d stored an incomplete row: %s", i, l)
			}
		}
	}
}

// checkBurstCards asserts that out holds the burst's cards in order, each
// complete with its result (the tool count the agent reported). A lost
// notification in the middle of a card does not show here; the SDK loses
// none without closing the connection, which fails the turn.
func checkBurstCards(t *testing.T, what, out string) {
	t.Helper()
	cards := parseCards(t, out)
	if len(cards) != burstCards {
		t.Fatalf("%s: %d cards, want %d", what, len(cards), burstCards)
	}
	for i, c := range cards {
		var p struct {
			Task struct {
				Status       string `json:"status"`
				ToolUseCount int    `json:"tool_use_count"`
			} `json:"subagent_task"`
		}
		if err := json.Unmarshal(c.Normalized, &p); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("toolu_burst_%06d", i)
		if *c.ToolCallID != want || *c.ToolStatus != "complete" || p.Task.Status != "completed" || p.Task.ToolUseCount != burstPer-2 {
			t.Fatalf("%s: card %d is %s %s %s/%d; want %s complete, completed, %d tools", what, i,
				*c.ToolCallID, *c.ToolStatus, p.Task.Status, p.Task.ToolUseCount, want, burstPer-2)
		}
	}
}
