package tap

import (
	"io"
	"sync"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// lastStatus keeps the last event of each card a sink received.
type lastStatus struct {
	mu   sync.Mutex
	last map[[2]string]adapter.Event
}

func (l *lastStatus) Record(e sink.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.ToolCallID != "" {
		l.last[[2]string{e.SessionID, e.ToolCallID}] = e.Event
	}
}

func (l *lastStatus) status(session, call string) adapter.ToolStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[[2]string{session, call}].Status
}

func (l *lastStatus) live(session, call string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.last[[2]string{session, call}]
	return ev.Child != nil && ev.Child.Live
}

// sessionsObserver observes an editor that declared the subagent-session
// form and opened sessions A and B on one agent; its events go to a
// lastStatus.
func sessionsObserver(t *testing.T) (*Observer, *lastStatus, func(from capture.Direction, line string)) {
	t.Helper()
	got := &lastStatus{last: map[[2]string]adapter.Event{}}
	term := view.NewTerminal(io.Discard, false)
	obs, err := NewObserver(ObserverConfig{View: term, Sink: sink.Fanout{term, got}})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(from capture.Direction, line string) { obs.Observe(from, []byte(line)) }
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}}`)
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"A"}}`)
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":3,"result":{"sessionId":"B"}}`)
	return obs, got, feed
}

// child is a subagent_update line announcing (or moving) child in parent.
func child(parent, child, state string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + parent +
		`","update":{"sessionUpdate":"subagent_update","sessionId":"` + child + `","title":"` + child + `","state":` + state + `}}}`
}

const (
	running = `{"state":"running"}`
	endTurn = `{"state":"idle","stopReason":"end_turn"}`
)

// A cancelled turn of session A ends A's open cards only: session B's
// child, running meanwhile, is not touched, and its later completion is
// taken (before, every open card of every session ended cancelled once no
// prompt was left running, and B's completion was refused: a settled card
// never moves back).
func TestCancelInOneSessionLeavesTheOthersChild(t *testing.T) {
	_, got, feed := sessionsObserver(t)
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"A","prompt":[]}}`)
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"B","prompt":[]}}`)
	feed(capture.FromAgent, child("A", "a-child", running))
	feed(capture.FromAgent, child("B", "b-child", running))
	// B's turn ends with its child still running (it outlives the turn).
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}`)
	feed(capture.FromClient, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"A"}}`)
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"cancelled"}}`)
	if s := got.status("A", "a-child"); s != adapter.ToolStatusCancelled || got.live("A", "a-child") {
		t.Errorf("A's child after A's cancelled turn: %s (live %v), want cancelled, not live", s, got.live("A", "a-child"))
	}
	if s := got.status("B", "b-child"); s != adapter.ToolStatusInProgress || !got.live("B", "b-child") {
		t.Errorf("B's child after A's cancelled turn: %s (live %v), want in_progress and live", s, got.live("B", "b-child"))
	}
	feed(capture.FromAgent, child("B", "b-child", endTurn))
	if s := got.status("B", "b-child"); s != adapter.ToolStatusComplete {
		t.Errorf("B's child after its completion: %s, want complete", s)
	}
}

// The last prompt of B ending while A's cancelled turn is answered
// first: A's cards end then, and B's complete child stays complete.
func TestCancelledSessionEndsWhenItsOwnPromptsEnd(t *testing.T) {
	_, got, feed := sessionsObserver(t)
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"A","prompt":[]}}`)
	feed(capture.FromAgent, child("A", "a-child", running))
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"B","prompt":[]}}`)
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"cancelled"}}`)
	if s := got.status("A", "a-child"); s != adapter.ToolStatusCancelled {
		t.Errorf("A's child once A's only prompt ended cancelled: %s, want cancelled (B's open prompt is not A's)", s)
	}
	feed(capture.FromAgent, child("B", "b-child", running))
	feed(capture.FromAgent, child("B", "b-child", endTurn))
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}`)
	if s := got.status("B", "b-child"); s != adapter.ToolStatusComplete {
		t.Errorf("B's child: %s, want complete", s)
	}
}

// endMidTurn observes A with a prompt open and a running child, and B
// whose child outlived B's answered prompt; then the connection ends, by
// the tap (agent false) or by the agent itself.
func endMidTurn(t *testing.T, agent bool) *lastStatus {
	t.Helper()
	obs, got, feed := sessionsObserver(t)
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"A","prompt":[]}}`)
	feed(capture.FromAgent, child("A", "a-child", running))
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"B","prompt":[]}}`)
	feed(capture.FromAgent, child("B", "b-child", running))
	feed(capture.FromAgent, child("B", "b-done", endTurn))
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}`)
	obs.endedByAgent(agent)
	obs.Finish()
	return got
}

// The tap ending mid-turn (the editor quits, or a stop signal) ends the
// open prompt's cards cancelled, as run does, and the child that outlived
// its turn in the other session unknown: no card stays open, and a
// finished one keeps its outcome (before, every card stayed in_progress
// for good).
func TestTapEndedMidTurnEndsOpenCards(t *testing.T) {
	got := endMidTurn(t, false)
	if s := got.status("A", "a-child"); s != adapter.ToolStatusCancelled || got.live("A", "a-child") {
		t.Errorf("child of the open prompt: %s (live %v), want cancelled, not live", s, got.live("A", "a-child"))
	}
	if s := got.status("B", "b-child"); s != adapter.ToolStatusUnknown || got.live("B", "b-child") {
		t.Errorf("child that outlived its turn: %s (live %v), want unknown, not live", s, got.live("B", "b-child"))
	}
	if s := got.status("B", "b-done"); s != adapter.ToolStatusComplete {
		t.Errorf("finished child: %s, want complete", s)
	}
}

// The agent ending the connection by itself mid-turn (it exited): the
// open prompt's cards end unknown, since the tap cannot know how they
// ended.
func TestAgentEndedMidTurnEndsOpenCardsUnknown(t *testing.T) {
	got := endMidTurn(t, true)
	for _, c := range [][2]string{{"A", "a-child"}, {"B", "b-child"}} {
		if s := got.status(c[0], c[1]); s != adapter.ToolStatusUnknown {
			t.Errorf("%s: %s, want unknown", c[1], s)
		}
	}
}
