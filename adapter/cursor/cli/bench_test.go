package cli

import (
	"testing"
)

// BenchmarkRunnerHandleLine is the runner's per-event overhead on top of
// parsing: validation, call tracking, payload bounds and event emission,
// for a realistic mix of lines (no process involved).
func BenchmarkRunnerHandleLine(b *testing.B) {
	lines := [][]byte{
		[]byte(lineThinking), []byte(lineReadStart), []byte(lineReadDone), []byte(lineAssistant),
		[]byte(lineShellStart), []byte(lineShellRej),
	}
	size := 0
	for _, l := range lines {
		size += len(l) + 1
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	events := 0
	tr := &turnRun{
		r:     &Runner{},
		t:     Turn{OnEvent: func(Event) { events++ }},
		lim:   DefaultLimits,
		to:    DefaultTimeouts,
		calls: map[string]*callState{},
	}
	tr.log = discardLogger()
	tr.handleLine([]byte(lineInit))
	for b.Loop() {
		for _, l := range lines {
			if tr.handleLine(l) != actContinue {
				b.Fatal("unexpected kill")
			}
		}
		tr.emitted = 0 // stay under the aggregate cap
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/event")
}
