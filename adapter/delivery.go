package adapter

// Event delivery: state changes run under the Tracker's lock, their events
// are queued there and handed to the callback outside it, in order, by one
// goroutine at a time.

// Do runs fn under the Tracker's lock with a Tx, then delivers the events
// fn emitted. Extension handlers (cursor/task) use it; fn must not block.
func (t *Tracker) Do(fn func(tx *Tx)) { t.do(fn) }

// DoAsync is Do without waiting for the callback: fn's state changes are
// made before DoAsync returns (so they are ordered with every later
// frame), while its events are delivered, still in order, by another
// goroutine (or by whichever caller feeds the Tracker next). An extension
// handler uses it to answer without waiting for the consumer.
func (t *Tracker) DoAsync(fn func(tx *Tx)) {
	t.mu.Lock()
	t.runLocked(fn)
	queued := len(t.queue) > 0 && !t.delivering
	t.mu.Unlock()
	if queued {
		go t.deliver()
	}
}

// Flush returns once every event emitted so far has been handed to the
// callback: it delivers what is queued itself, or waits for the goroutine
// that is delivering. Call it before reading results that events feed (for
// example after the prompt response, when a cursor/task handler answered
// without waiting, see DoAsync). Never call it from the event callback: the
// callback is part of the delivery Flush waits for.
func (t *Tracker) Flush() {
	t.mu.Lock()
	for t.delivering || len(t.queue) > 0 {
		if !t.delivering {
			t.mu.Unlock()
			t.deliver()
			t.mu.Lock()
			continue
		}
		t.idle.Wait()
	}
	t.mu.Unlock()
}

func (t *Tracker) do(fn func(tx *Tx)) {
	t.mu.Lock()
	t.runLocked(fn)
	t.mu.Unlock()
	t.deliver()
}

// runLocked runs fn with a Tx valid only during the call, recovering (and
// counting) a panic so that bad input never escapes the Tracker. t.mu is
// held.
func (t *Tracker) runLocked(fn func(tx *Tx)) {
	tx := &Tx{t: t}
	defer func() {
		tx.t = nil
		if r := recover(); r != nil {
			t.counters[CounterRecoveredPanics]++
		}
	}()
	fn(tx)
}

// deliver hands queued events to the callback in order. One goroutine
// delivers at a time; events queued meanwhile by others are delivered by it.
func (t *Tracker) deliver() {
	t.mu.Lock()
	if t.delivering || len(t.queue) == 0 {
		t.mu.Unlock()
		return
	}
	t.delivering = true
	for len(t.queue) > 0 {
		batch := t.queue
		t.queue = nil
		t.mu.Unlock()
		for _, e := range batch {
			t.call(e)
		}
		t.mu.Lock()
	}
	t.delivering = false
	t.idle.Broadcast()
	t.mu.Unlock()
}

func (t *Tracker) call(e Event) {
	if t.onEvent == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			t.mu.Lock()
			t.counters[CounterCallbackPanics]++
			t.mu.Unlock()
		}
	}()
	t.onEvent(e)
}

func (t *Tracker) enqueue(e Event) {
	t.counters[CounterEvents]++
	t.queue = append(t.queue, e)
}

func (t *Tracker) snapshot(kind EventKind, c *Card, status ToolStatus) Event {
	t.account(c)
	e := Event{
		Kind:             kind,
		SessionID:        c.sessionID,
		ToolCallID:       c.id,
		ParentToolCallID: c.parent,
		Title:            c.title,
		ToolKind:         c.kind,
		Status:           status,
		Child:            c.child.Clone(),
	}
	if s := t.sessions[c.sessionID]; s != nil {
		e.ParentSessionID = s.parent
	}
	if len(c.refs) > 0 {
		e.SessionRefs = append([]SessionRef(nil), c.refs...)
	}
	if c.task != nil {
		p := &Payload{Kind: PayloadKindSubagentTask, SubagentTask: c.task.Clone()}
		if t.dialect != nil && t.dialect.Traits().BackgroundWork {
			p.BackgroundWork = &BackgroundWork{
				Kind:     BackgroundWorkKindSubagent,
				WorkID:   c.task.AgentID,
				Detached: c.task.IsAsync,
				Ended:    c.status.Terminal() && c.task.Status != "async_launched",
			}
		}
		e.Payload = p
	}
	return e
}
