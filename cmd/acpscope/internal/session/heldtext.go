package session

import (
	"sync"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Bounds on the agent text held while it may be a background subagent's
// (adapter.Tracker.HoldText): past either, what a session holds is
// released (judged and shown) at once.
const (
	// maxHeldTextBytes and maxHeldChunks bound the text held per session
	// (and so the judgement's work, adapter.Tracker.HeldChildText).
	maxHeldTextBytes = 64 << 10
	maxHeldChunks    = 4096
	// maxHeldTextAge bounds how long a session's first held chunk waits.
	maxHeldTextAge = 30 * time.Second
	// maxHeldSessions bounds the sessions holding text at once: a chunk
	// to hold for one more session first releases every other.
	maxHeldSessions = 64
)

// heldText holds a session's agent text while the tracker says it may be a
// background subagent's answer sent as the session's own (Copilot) and
// releases it when the hold ends (the answer was read), at the turn's end,
// at the connection's end or past its bounds: the run the tracker judges a
// child's (Tracker.HeldChildText) is left to its card, the rest is shown
// as the session's, in arrival order. Safe for concurrent use.
type heldText struct {
	mu      sync.Mutex
	tracker *adapter.Tracker
	out     textSink
	// now is the clock the age bound is measured on (a replay's is the
	// capture's own, so a replay holds what the live run held); timers,
	// for text no later update releases, run only on the wall clock.
	now    func() time.Time
	timers bool
	held   map[string]*heldRun
}

// heldRun is what one session holds.
type heldRun struct {
	chunks []heldChunk
	bytes  int
	since  time.Time
	timer  *time.Timer
}

// heldChunk is one agent_message_chunk held.
type heldChunk struct{ messageID, text string }

// newHeldText returns a holder showing text on out; clock nil means the
// wall clock (with timers).
func newHeldText(tracker *adapter.Tracker, out textSink, clock func() time.Time) *heldText {
	h := &heldText{tracker: tracker, out: out, now: clock, held: map[string]*heldRun{}}
	if h.now == nil {
		h.now, h.timers = time.Now, true
	}
	return h
}

// agentText shows a chunk of the session's own agent text, or holds it
// while the tracker says so (or while earlier text of the session is held,
// so the order stays the wire's).
func (h *heldText) agentText(sessionID, messageID, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.held[sessionID]
	if r == nil && !h.tracker.HoldText(sessionID) {
		h.out.AgentMessage(sessionID, messageID, text)
		return
	}
	if r == nil {
		if len(h.held) >= maxHeldSessions {
			for id := range h.held {
				h.releaseLocked(id)
			}
		}
		r = &heldRun{since: h.now()}
		h.held[sessionID] = r
		if h.timers {
			r.timer = time.AfterFunc(maxHeldTextAge, func() {
				h.mu.Lock()
				defer h.mu.Unlock()
				if h.held[sessionID] == r {
					h.releaseLocked(sessionID)
				}
			})
		}
	}
	r.chunks = append(r.chunks, heldChunk{messageID, text})
	r.bytes += len(text)
	if r.bytes > maxHeldTextBytes || len(r.chunks) > maxHeldChunks || h.now().Sub(r.since) > maxHeldTextAge {
		h.releaseLocked(sessionID)
	}
}

// updated releases the session's held text once the tracker no longer
// holds it (the update just fed answered it) or it is past its age.
func (h *heldText) updated(sessionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.held[sessionID]; r != nil && (!h.tracker.HoldText(sessionID) || h.now().Sub(r.since) > maxHeldTextAge) {
		h.releaseLocked(sessionID)
	}
}

// release releases what the session holds (its turn ended); nil-safe.
func (h *heldText) release(sessionID string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releaseLocked(sessionID)
}

// releaseAll releases what every session holds (the connection ended);
// nil-safe.
func (h *heldText) releaseAll() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.held {
		h.releaseLocked(id)
	}
}

// releaseLocked has the tracker judge the session's held chunks and shows
// those that are the session's own.
func (h *heldText) releaseLocked(sessionID string) {
	r := h.held[sessionID]
	if r == nil {
		return
	}
	delete(h.held, sessionID)
	if r.timer != nil {
		r.timer.Stop()
	}
	texts := make([]string, len(r.chunks))
	for i, c := range r.chunks {
		texts[i] = c.text
	}
	for i, owner := range h.tracker.HeldChildText(sessionID, texts) {
		if owner == "" {
			h.out.AgentMessage(sessionID, r.chunks[i].messageID, r.chunks[i].text)
		}
	}
}
