package adapter_test

import (
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Scenarios 42 and 48: OpenCode task frames; isBackground from OpenCode is
// not read.
func TestScenario42_OpenCodeTask(t *testing.T) {
	res := replay(t, "opencode_task", adapter.Config{})
	got := payloadJSON(t, last(t, res, "call_1"))
	want := `{"kind":"subagent_task","subagent_task":{"description":"Explore","prompt":"Find X","subagent_type":"general","model":"opencode/big-pickle","child_session_id":"ses_child"}}`
	if got != want {
		t.Errorf("payload\n got %s\nwant %s", got, want)
	}
	if res.Dialect != adapter.DialectOpenCode {
		t.Errorf("dialect %q", res.Dialect)
	}
}
