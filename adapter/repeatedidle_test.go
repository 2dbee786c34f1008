package adapter_test

import (
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// codex-acp 2.6.0 sends an idle without a stop reason for a child that is
// idle already, just after a session/load on the same connection: in one
// run after the client's next prompt (the committed scenario capture), in
// another before it (recorded by make agents under load), and in a live
// client that idle may be handled just before or just after the load's
// end is noted. It claims no outcome, so it must not change the card:
// the child's completed status stays in every order. (Before, the replay
// said "idle" where the live run, which took the idle for history, said
// "completed": replay did not equal live.)
func TestRepeatedIdleKeepsTheOutcome(t *testing.T) {
	for _, name := range []string{
		"../conformance/agents/testdata/codex-acp-2.6.0/v1-sessions-reload.jsonl",
		"testdata/real/codex-2.6.0/v1-sessions-reload-idle-before-prompt.jsonl",
	} {
		res, err := adapter.ReplayCapture(name, adapter.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var last *adapter.Event
		for i := range res.Events {
			if e := &res.Events[i]; e.Payload != nil && e.Payload.SubagentTask != nil {
				last = e
			}
		}
		if last == nil {
			t.Fatalf("%s: no subagent card", name)
		}
		if got := last.Payload.SubagentTask.Status; got != "completed" || last.Status != adapter.ToolStatusComplete {
			t.Errorf("%s: the child's card ends %s with agent status %q, want complete, \"completed\"", name, last.Status, got)
		}
	}
}
