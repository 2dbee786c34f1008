package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// An agent that sends updates for a session the client never opened (and
// never announced as a child): they are counted and reported as a warning,
// never shown, never stored; --json and the store (what the web view reads)
// agree (issue 26 point 4). The fake agent's -mode foreign completes one
// card in its own session and sends two for "never-opened".
func TestForeignSessionIsNeverStored(t *testing.T) {
	for _, json := range []bool{true, false} {
		db := filepath.Join(t.TempDir(), "scope.db")
		args := []string{"run", "--db", db, "--prompt", "go", "--cwd", t.TempDir()}
		if json {
			args = append(args, "--json")
		} else {
			args = append(args, "--plain")
		}
		code, out, errOut := acpscope(t, "", append(args, "--", fakeAgent, "-mode", "foreign")...)
		if code != exitOK {
			t.Fatalf("json=%v: exit %d: %s", json, code, errOut)
		}
		if strings.Contains(out, "toolu_GHOST") || strings.Contains(out, "never-opened") || strings.Contains(out, "Ghost task") {
			t.Errorf("json=%v: the foreign session's card was shown:\n%s", json, out)
		}
		if !strings.Contains(out, "Own task") {
			t.Errorf("json=%v: the session's own card is missing:\n%s", json, out)
		}
		if !strings.Contains(errOut, "warning: ignored 2 session update(s) for a session the client never opened") {
			t.Errorf("json=%v: no warning on stderr:\n%s", json, errOut)
		}
		code, rows, errOut := acpscope(t, "", "subagents", "--session", "never-opened", "--db", db)
		if code != exitOK || !strings.Contains(rows, "no subagent contexts stored") {
			t.Errorf("json=%v: the foreign session was stored (exit %d): %s%s", json, code, rows, errOut)
		}
		code, sessions, errOut := acpscope(t, "", "sessions", "--db", db, "--json")
		if code != exitOK || strings.Contains(sessions, "never-opened") || !strings.Contains(sessions, "fake-session") {
			t.Errorf("json=%v: sessions (exit %d):\n%s%s", json, code, sessions, errOut)
		}
	}
}
