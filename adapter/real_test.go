package adapter_test

import (
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// TestRealAgentCaptures replays frames the published agents sent
// (recorded by conformance/agents; testdata/real/<agent>/ keeps copies, so
// this runs without npm) and pins the cards each produces.
func TestRealAgentCaptures(t *testing.T) {
	runCaptureTable(t, []captureCase{
		{
			// codex-acp 0.16.0 ran spawn_agent and wait_agent, yet sent no
			// tool call for them: no card is the right outcome.
			name: "CodexOneNoCard", capture: "real/codex/one", dialect: adapter.DialectCodex,
			cards: []string{},
		},
		{
			name: "CodexParallelNoCard", capture: "real/codex/parallel", dialect: adapter.DialectCodex,
			cards: []string{},
		},
	})
}
