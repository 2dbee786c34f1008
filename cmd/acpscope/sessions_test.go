package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// replayDemo replays the bundled demo into a fresh SQLite database.
func replayDemo(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "scope.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", db); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	return db
}

func TestSessionsListsTheReplayedDemo(t *testing.T) {
	db := replayDemo(t)
	code, out, errOut := acpscope(t, "", "sessions", "--db", db)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "SESSION") {
		t.Fatalf("want a header and two sessions:\n%s", out)
	}
	for _, want := range []string{"cur-7f3a", "cursor", "cl-91b0", "claude"} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = acpscope(t, "", "sessions", "--db", db, "--json")
	if code != exitOK {
		t.Fatalf("--json exit %d: %s", code, errOut)
	}
	got := map[string]web.SessionRow{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r web.SessionRow
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got[r.ID] = r
	}
	for id, agent := range map[string]string{"cur-7f3a": "cursor", "cl-91b0": "claude"} {
		r := got[id]
		if r.Agent != agent || r.Cards != 2 || r.Turns != 1 || r.Started == nil || r.Status == "" {
			t.Errorf("%s: %+v", id, r)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
		not  string
	}{
		{[]string{"--agent", "claude"}, "cl-91b0", "cur-7f3a"},
		{[]string{"--text", "summarize src"}, "cur-7f3a", "cl-91b0"},
		{[]string{"--limit", "1"}, "SESSION", ""},
		{[]string{"--agent", "codex"}, "no sessions stored", "cur-7f3a"},
	} {
		code, out, errOut := acpscope(t, "", append([]string{"sessions", "--db", db}, tc.args...)...)
		if code != exitOK || !strings.Contains(out, tc.want) || (tc.not != "" && strings.Contains(out, tc.not)) {
			t.Errorf("%v: exit %d, out:\n%s%s", tc.args, code, out, errOut)
		}
	}
	if _, out, _ := acpscope(t, "", "sessions", "--db", db, "--limit", "1"); strings.Count(out, "\n") != 2 {
		t.Errorf("--limit 1:\n%s", out)
	}
}

func TestSessionsUsage(t *testing.T) {
	for _, args := range [][]string{{"sessions", "extra"}, {"sessions", "--limit", "0"}, {"sessions", "--bogus"}} {
		if code, _, _ := acpscope(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// Stored text comes from the agent: a session id carrying OSC 52, a clear
// screen and a right-to-left override reaches the terminal escaped.
func TestSessionsEscapesStoredText(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scope.db")
	ctx := context.Background()
	s, err := persistence.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "evil\x1b]52;c;aGk=\x07\x1b[2J\u202Eexe.txt"
	if err := s.EnsureSession(ctx, hostile, hostile); err != nil {
		t.Fatal(err)
	}
	if err := s.Upsert(ctx, persistence.Frame{TaskSessionID: hostile, TaskID: hostile, ToolCallID: "t",
		ExecutionID: web.ExecutionID("cla\x1bude", "r")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	code, out, errOut := acpscope(t, "", "sessions", "--db", db)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202E") {
		t.Fatalf("control or bidi characters reached the output: %q", out)
	}
	if !strings.Contains(out, safetext.Text(hostile)) {
		t.Fatalf("session id not shown sanitised: %q", out)
	}
	code, out, errOut = acpscope(t, "", "sessions", "--json", "--db", db)
	if code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202E") {
		t.Fatalf("--json: control or bidi characters reached the output: %q", out)
	}
	var row struct{ ID string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &row); err != nil || row.ID != hostile {
		t.Fatalf("--json: the id must round-trip unchanged: %q (%v)", out, err)
	}
}
