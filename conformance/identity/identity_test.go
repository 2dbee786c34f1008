package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReplayWithoutCursorAdapter replays this suite's captures through the
// plain build (no Cursor adapter linked): every replay completes, each
// capture gets its agent's dialect, Cursor's falls back to generic and its
// cursor/task is answered -32601, and a second replay is identical.
func TestReplayWithoutCursorAdapter(t *testing.T) {
	if cursorInstalled {
		t.Skip("this test covers the build without the Cursor adapter")
	}
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.jsonl"))
	if err != nil || len(files) < 8 {
		t.Fatalf("captures: %v, %v", files, err)
	}
	want := map[string]string{
		"auggie": "auggie", "claude": "claude", "codex": "codex", "copilot": "copilot",
		"opencode": "opencode", "generic": "generic", "cursor": "generic",
	}
	for _, f := range files {
		first, second := replayFile(f), replayFile(f)
		if len(first.Errors) > 0 {
			t.Errorf("%s: %v", f, first.Errors)
		}
		if d := cmp.Diff(first, second); d != "" {
			t.Errorf("%s: two replays differ:\n%s", f, d)
		}
		if got := first.Dialect; got != want[first.Agent] {
			t.Errorf("%s: dialect %q, want %q", f, got, want[first.Agent])
		}
		if len(first.Events) == 0 {
			t.Errorf("%s: no events", f)
		}
		if first.Agent == "cursor" && !strings.Contains(strings.Join(first.ClientWire, "\n"), `"error":{"code":-32601,"message":"Method not found","data":{"method":"cursor/task"}}`) {
			t.Errorf("%s: cursor/task was not refused without the adapter:\n%s", f, strings.Join(first.ClientWire, "\n"))
		}
	}
}
