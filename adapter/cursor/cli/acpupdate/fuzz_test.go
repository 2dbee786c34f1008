package acpupdate

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
)

// FuzzMap maps a sequence of runner tool events built from the CLI's
// strings (tool name, paths, commands, diffs: valid UTF-8, as the runner
// guarantees) and then finishes a failed turn. Every notification must
// encode, a title stays one line of valid UTF-8, and Finish fails exactly
// the calls still open.
func FuzzMap(f *testing.F) {
	f.Add("read", "main.go", "", "", []byte{0, 1, 2})
	f.Add("shell", "", "go test ./...\nmore", "", []byte{0, 9})
	f.Add("édit", "é/"+strings.Repeat("é", 80), "", "-a\n+b", []byte{0x20, 0x25, 0x41})
	f.Fuzz(func(t *testing.T, name, path, command, diff string, script []byte) {
		if !utf8.ValidString(name) || !utf8.ValidString(path) || !utf8.ValidString(command) || !utf8.ValidString(diff) {
			return // the runner only emits valid UTF-8 (FuzzTurnLines)
		}
		statuses := []cli.ToolStatus{cli.ToolRunning, cli.ToolSucceeded, cli.ToolFailed, cli.ToolDeclined, cli.ToolClosed}
		m := New("s")
		open := map[string]bool{}
		check := func(ns []acp.SessionNotification) {
			for _, n := range ns {
				if _, err := json.Marshal(n); err != nil {
					t.Fatalf("notification does not encode: %v", err)
				}
				if tc := n.Update.ToolCall; tc != nil {
					if !utf8.ValidString(tc.Title) || strings.ContainsAny(tc.Title, "\n") {
						t.Fatalf("title %q", tc.Title)
					}
					if len(tc.Title) > 2*(120+len("…"))+1 {
						t.Fatalf("title of %d bytes", len(tc.Title))
					}
				}
			}
		}
		for _, b := range script {
			id := string(rune('a' + int(b>>5)))
			te := &cli.ToolEvent{CallID: id, Name: name, Key: name + "ToolCall", Path: path, Command: command,
				Diff: diff, Outcome: "success", Args: json.RawMessage(`{"path":"p"}`), Output: json.RawMessage(`{}`)}
			if b&1 == 0 {
				te.Status = cli.ToolRunning
				check(m.Map(cli.Event{Kind: cli.EventToolStarted, Tool: te}))
				open[id] = true
			} else {
				te.Status = statuses[1+int(b>>1)%4]
				check(m.Map(cli.Event{Kind: cli.EventToolCompleted, Tool: te}))
				delete(open, id)
			}
		}
		ns := m.Finish(cli.Result{Class: cli.ClassStopped, IsError: true})
		check(ns)
		if len(ns) != len(open) {
			t.Fatalf("finish failed %d calls, %d were open", len(ns), len(open))
		}
		for _, n := range ns {
			u := n.Update.ToolCallUpdate
			if u == nil || !open[string(u.ToolCallId)] {
				t.Fatalf("finish touched a call that was not open: %+v", n.Update)
			}
		}
		if len(m.Finish(cli.Result{Class: cli.ClassStopped, IsError: true})) != 0 {
			t.Fatal("a second finish failed calls again")
		}
	})
}
