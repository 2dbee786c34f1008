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
