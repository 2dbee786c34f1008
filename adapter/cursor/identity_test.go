package cursor_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"

	// The Claude captures replay through the real Claude dialect.
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Cursor support changes nothing for other agents (this package's share;
// the conformance suite proves it again end to end): every non-Cursor
// capture in the repository replays to the same events, JSON-RPC replies
// and counters with the Cursor handler installed as without it. The
// corpora are the common model's and the Claude dialect's captures (the
// real agents' frames included) plus this package's adversarial OpenCode
// one.
func TestNonCursorByteIdentical(t *testing.T) {
	var paths []string
	for _, glob := range []string{"../testdata/*.jsonl", "../testdata/real/*/*.jsonl", "../claude/testdata/*.jsonl", "../claude/testdata/real/*.jsonl", "testdata/*.jsonl"} {
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

// Cursor's ordinary (non-subagent) tool calls render exactly as they would
// without the Cursor dialect: every event whose card is not a subagent is
// the same, byte for byte, when the same Cursor capture runs through the
// generic dialect with no handler.
func TestCursorOrdinaryToolsUnchanged(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		c, err := capture.ReadFile(path)
		if err != nil || c.Agent() != "cursor" {
			continue
		}
		with := replayFile(t, path, true)
		without := replayWith(t, path, false, adapter.Config{DialectName: adapter.DialectGeneric})
		if with.res.Dialect != adapter.DialectCursor || without.res.Dialect != adapter.DialectGeneric {
			t.Fatalf("%s: dialects %s / %s", path, with.res.Dialect, without.res.Dialect)
		}
		if got, want := ordinary(t, with), ordinary(t, without); got != want {
			t.Errorf("%s: ordinary tool events differ\n--- cursor\n%s\n--- generic\n%s", path, got, want)
		}
	}
}

// ordinary renders the events of cards that are never subagents.
func ordinary(t *testing.T, r run) string {
	t.Helper()
	subagent := map[string]bool{}
	for _, e := range r.res.Events {
		if e.Payload != nil {
			subagent[e.SessionID+"\x00"+e.ToolCallID] = true
		}
	}
	var b bytes.Buffer
	for _, e := range r.res.Events {
		if !subagent[e.SessionID+"\x00"+e.ToolCallID] {
			line, _ := json.Marshal(e)
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
