package claude_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

// replay runs testdata/<name>.jsonl through a Tracker and compares the
// events (one JSON line each) and the counters with testdata/<name>.golden.
func replay(t *testing.T, name string, cfg adapter.Config) *adapter.ReplayResult {
	t.Helper()
	res, err := adapter.ReplayCapture(filepath.Join("testdata", name+".jsonl"), cfg, nil)
	if err != nil {
		t.Fatalf("replay %s: %v", name, err)
	}
	goldentest.Compare(t, filepath.Join("testdata", name+".golden"), goldentest.Render(t, res))
	return res
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
