// Package goldentest holds the golden-file helpers shared by the tests of
// adapter, adapter/claude, adapter/cursor and cmd/acpscope: compare output
// with a golden file (rewritten under -update) and render what a replay
// produced as JSON lines.
package goldentest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// update is the test binary's -update flag: rewrite golden files instead of
// comparing with them.
var update = flag.Bool("update", false, "rewrite golden files")

// Render renders a replay: one JSON line per event, then each extra line
// as given (callers add their own prefix, e.g. "reply "), then a last line
// with the dialect, the counters and the entries the replay could not use.
func Render(t testing.TB, res *adapter.ReplayResult, extra ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, e := range res.Events {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, line := range extra {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	tail, _ := json.Marshal(map[string]any{"dialect": res.Dialect, "counters": res.Counters, "errors": res.Errors})
	b.Write(tail)
	b.WriteByte('\n')
	return b.Bytes()
}

// Compare fails t when got differs from the golden file at path; under
// -update it rewrites the file instead.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Replay runs testdata/<name>.jsonl (relative to the test's package)
// through a Tracker configured by cfg and compares the rendered events and
// counters with testdata/<name>.golden.
func Replay(t testing.TB, name string, cfg adapter.Config) *adapter.ReplayResult {
	t.Helper()
	res, err := adapter.ReplayCapture(filepath.Join("testdata", name+".jsonl"), cfg, nil)
	if err != nil {
		t.Fatalf("replay %s: %v", name, err)
	}
	Compare(t, filepath.Join("testdata", name+".golden"), Render(t, res))
	return res
}

// Last returns the last event of res for toolCallID, failing the test when
// there is none.
func Last(t testing.TB, res *adapter.ReplayResult, toolCallID string) adapter.Event {
	t.Helper()
	for i := len(res.Events) - 1; i >= 0; i-- {
		if res.Events[i].ToolCallID == toolCallID {
			return res.Events[i]
		}
	}
	t.Fatalf("no event for %s", toolCallID)
	return adapter.Event{}
}

// PayloadJSON returns the event's payload as JSON.
func PayloadJSON(t testing.TB, e adapter.Event) string {
	t.Helper()
	b, err := json.Marshal(e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Statuses returns the tool statuses res emitted for toolCallID, in order.
func Statuses(res *adapter.ReplayResult, toolCallID string) []adapter.ToolStatus {
	var out []adapter.ToolStatus
	for _, e := range res.Events {
		if e.ToolCallID == toolCallID {
			out = append(out, e.Status)
		}
	}
	return out
}
