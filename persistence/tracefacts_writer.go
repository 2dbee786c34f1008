package persistence

import "time"

// The Writer's queue of trace facts (tracefacts.go): turns, tool calls
// and their events go through the same batches, retries and shedding as
// the cards, merged per key while they wait, but never wait for room: a
// full queue (MaxPending facts) sheds them at once, counted in
// WriterStats.TraceFactsNotStored. They are not cards: the card
// accounting and the journal do not count them.

// traceKey is a queued trace fact's identity: its kind ('t' turn, 'c'
// tool call, 'e' event), session and id.
type traceKey struct {
	kind    byte
	session string
	id      string
}

// traceFact is one queued trace fact: exactly one of its fields is set.
type traceFact struct {
	turn  *TurnFact
	call  *ToolCallFact
	event *ToolEventFact
	n     int64 // the facts recorded into it (merged while waiting)
}

// traceQueue is the Writer's pending trace facts, oldest first.
type traceQueue struct {
	pending map[traceKey]*traceFact
	order   []traceKey
}

// RecordTurn queues a turn's facts (merged with those of the same turn
// still waiting). A writer over a store without WithTraceFacts drops it.
func (w *Writer) RecordTurn(f TurnFact) {
	if w == nil || f.SessionID == "" || f.TurnID == "" {
		return
	}
	w.recordTrace(traceKey{'t', f.SessionID, f.TurnID}, &traceFact{turn: &f})
}

// RecordToolCall queues a tool call's facts (merged likewise).
func (w *Writer) RecordToolCall(f ToolCallFact) {
	if w == nil || f.SessionID == "" || f.ToolCallID == "" {
		return
	}
	if f.SeenAt.IsZero() {
		f.SeenAt = w.s.now()
	}
	w.recordTrace(traceKey{'c', f.SessionID, f.ToolCallID}, &traceFact{call: &f})
}

// RecordToolEvent queues one event of a tool call.
func (w *Writer) RecordToolEvent(f ToolEventFact) {
	if w == nil || f.SessionID == "" || f.EventID == "" || f.ToolCallID == "" || f.Name == "" {
		return
	}
	if f.At.IsZero() {
		f.At = w.s.now()
	}
	w.recordTrace(traceKey{'e', f.SessionID, f.EventID}, &traceFact{event: &f})
}

func (w *Writer) recordTrace(k traceKey, f *traceFact) {
	if !w.s.traceFacts.on {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.TraceFacts++
	q := &w.traces
	f.n = 1
	if old, ok := q.pending[k]; ok {
		mergeTraceFacts(old, f)
		old.n++
		return
	}
	if w.closed || len(q.pending) >= w.opt.MaxPending {
		w.stats.TraceFactsNotStored++
		return
	}
	if q.pending == nil {
		q.pending = map[traceKey]*traceFact{}
	}
	if len(w.pending) == 0 && len(q.pending) == 0 && w.inflight == 0 {
		w.idle = make(chan struct{})
	}
	q.pending[k] = f
	q.order = append(q.order, k)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// mergeTraceFacts folds newer into old (both of one key): what newer
// reports replaces, what it does not keeps old's; a tool call keeps its
// first turn and observation, and its settlement once settled.
func mergeTraceFacts(old, newer *traceFact) {
	pick := func(a *string, b string) {
		if b != "" {
			*a = b
		}
	}
	switch {
	case old.turn != nil && newer.turn != nil:
		o, n := old.turn, newer.turn
		if n.Index > 0 {
			o.Index = n.Index
		}
		pick(&o.AgentName, n.AgentName)
		pick(&o.AgentVersion, n.AgentVersion)
		pick(&o.Dialect, n.Dialect)
		pick(&o.StopReason, n.StopReason)
		pick(&o.Error, n.Error)
		pick(&o.Traceparent, n.Traceparent)
		if n.Usage != nil {
			o.Usage = n.Usage
		}
		if o.StartedAt.IsZero() {
			o.StartedAt = n.StartedAt
		}
		if !n.EndedAt.IsZero() {
			o.EndedAt = n.EndedAt
		}
	case old.call != nil && newer.call != nil:
		o, n := old.call, newer.call
		if o.TurnID == "" {
			o.TurnID = n.TurnID
		}
		pick(&o.ParentSessionID, n.ParentSessionID)
		pick(&o.ParentToolCallID, n.ParentToolCallID)
		pick(&o.Title, n.Title)
		pick(&o.Kind, n.Kind)
		pick(&o.Status, n.Status)
		pick(&o.ChildState, n.ChildState)
		pick(&o.ChildStopReason, n.ChildStopReason)
		if !o.Settled {
			// The first observation is the row's (an insert) or the stored
			// one (an update keeps first_seen_at); SeenAt moves to the
			// latest, the settlement's when it settled.
			o.SeenAt, o.Settled = later(o.SeenAt, n.SeenAt), n.Settled
		}
	}
	// An event is written once: a second of the same id changes nothing.
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// takeTraces moves up to n pending trace facts into b, with w.mu held.
func (w *Writer) takeTraces(b *batch, n int) {
	q := &w.traces
	n = min(n, len(q.order))
	if n <= 0 {
		return
	}
	b.traceKeys = q.order[:n:n]
	b.traces = make([]*traceFact, n)
	for i, k := range b.traceKeys {
		b.traces[i] = q.pending[k]
		delete(q.pending, k)
	}
	q.order = q.order[n:]
	w.inflight += n
}

// settleTraces books the trace facts of a batch, with w.mu held: written,
// refused (not stored), or failed (queued again before anything newer of
// the same key).
func (w *Writer) settleTraces(b batch, err error, rejected bool) {
	w.inflight -= len(b.traces)
	q := &w.traces
	n := int64(0)
	for _, f := range b.traces {
		n += f.n
	}
	switch {
	case err == nil:
		w.stats.StoredTraceFacts += n
	case rejected:
		w.stats.TraceFactsNotStored += n
	default:
		var again []traceKey
		for i, k := range b.traceKeys {
			f := b.traces[i]
			if newer, ok := q.pending[k]; ok {
				mergeTraceFacts(f, newer)
				f.n += newer.n
				q.pending[k] = f
				continue
			}
			if q.pending == nil {
				q.pending = map[traceKey]*traceFact{}
			}
			q.pending[k] = f
			again = append(again, k)
		}
		q.order = append(again, q.order...)
	}
}

// dropTraces counts the pending trace facts as not stored and empties the
// queue, with w.mu held (Close).
func (w *Writer) dropTraces() {
	for _, f := range w.traces.pending {
		w.stats.TraceFactsNotStored += f.n
	}
	w.traces = traceQueue{}
}

// traceStatements are the statements of b's trace facts; none while the
// store has no trace facts tables (a step that failed, an older schema).
func (s *Store) traceStatements(b batch) []batchStatement {
	if len(b.traces) == 0 || !s.traceFacts.ready.Load() {
		return nil
	}
	out := make([]batchStatement, len(b.traces))
	for i, f := range b.traces {
		out[i] = s.traceStatement(f)
	}
	return out
}
