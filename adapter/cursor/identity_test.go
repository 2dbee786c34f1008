package cursor_test

import (
	"bytes"
	"path/filepath"
	"testing"

	// The Claude captures replay through the real Claude dialect.
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Scenario 47 (this package's share; the conformance suite proves it again
// end to end): every non-Cursor capture in the repository replays to the
// same events, JSON-RPC replies and counters with the Cursor handler
// installed as without it. The corpora are the common model's and the
// Claude dialect's captures plus this package's adversarial OpenCode one.
func TestScenario47_NonCursorByteIdentical(t *testing.T) {
	var paths []string
	for _, glob := range []string{"../testdata/*.jsonl", "../claude/testdata/*.jsonl", "testdata/*.jsonl"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	checked := 0
	for _, path := range paths {
		c, err := capture.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if c.Agent() == "cursor" {
			continue
		}
		checked++
		t.Run(path, func(t *testing.T) {
			without := render(t, replayFile(t, path, false))
			with := replayFile(t, path, true)
			if with.res.Dialect == "cursor" {
				t.Skip("capture header is not cursor but the agent is")
			}
			if got := render(t, with); !bytes.Equal(without, got) {
				t.Errorf("output differs with the Cursor handler installed\n--- without\n%s\n--- with\n%s", without, got)
			}
		})
	}
	if checked < 2 {
		t.Fatalf("only %d non-Cursor captures found", checked)
	}
	t.Logf("%d non-Cursor captures compared", checked)
	seen := map[string]bool{}
	for _, path := range paths {
		if filepath.Dir(path) == "../claude/testdata" {
			seen[replayFile(t, path, true).res.Dialect] = true
		}
	}
	if !seen["claude"] {
		t.Errorf("Claude captures did not replay through the Claude dialect: %v", seen)
	}
}
