package claude_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

var update = flag.Bool("update", false, "rewrite golden files")

// replay runs testdata/<name>.jsonl through a Tracker and compares the
// events (one JSON line each) and the counters with testdata/<name>.golden.
func replay(t *testing.T, name string, cfg adapter.Config) *adapter.ReplayResult {
	t.Helper()
	res, err := adapter.ReplayCapture(filepath.Join("testdata", name+".jsonl"), cfg, nil)
	if err != nil {
		t.Fatalf("replay %s: %v", name, err)
	}
	compareGolden(t, filepath.Join("testdata", name+".golden"), render(t, res))
	return res
}

func render(t *testing.T, res *adapter.ReplayResult) []byte {
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
	tail, _ := json.Marshal(map[string]any{"dialect": res.Dialect, "counters": res.Counters, "errors": res.Errors})
	b.Write(tail)
	b.WriteByte('\n')
	return b.Bytes()
}

func compareGolden(t *testing.T, path string, got []byte) {
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

// last returns the last event for toolCallID.
func last(t *testing.T, res *adapter.ReplayResult, toolCallID string) adapter.Event {
	t.Helper()
	for i := len(res.Events) - 1; i >= 0; i-- {
		if res.Events[i].ToolCallID == toolCallID {
			return res.Events[i]
		}
	}
	t.Fatalf("no event for %s", toolCallID)
	return adapter.Event{}
}

func payloadJSON(t *testing.T, e adapter.Event) string {
	t.Helper()
	b, err := json.Marshal(e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var _ = strings.TrimSpace
