package acp

import (
	"context"
	"encoding/json"
	"errors"
)

// handlerScope is the context a handler receives: its parent's values and
// cancellation, plus a marker saying which handler of which connection it
// belongs to. Each handler call gets its own scope, and the scope ends when
// the handler returns: a call made with it (or with a context derived from
// it, from any goroutine) counts as the handler's call only while the
// handler runs. The context itself stays usable after that (a notification
// handler's until the connection ends, a request handler's until it is
// cancelled after the reply), it just no longer marks anything.
type handlerScope struct {
	context.Context
	conn *Connection
	// seq is the notification's sequence number; 0 for a request handler.
	seq uint64
	// ended and calls are guarded by conn.mu and changed only by
	// (*Connection).stepLocked: ended once the handler returned, calls the
	// calls made with the scope while it ran whose response has not
	// arrived.
	ended bool
	calls int
}

// handlerScopeKey finds the innermost handlerScope in a context.
type handlerScopeKey struct{}

// Value returns the scope for handlerScopeKey and the parent's values
// otherwise.
func (s *handlerScope) Value(key any) any {
	if _, ok := key.(handlerScopeKey); ok {
		return s
	}
	return s.Context.Value(key)
}

// scopeOf returns the innermost handler scope of c in ctx, or nil.
func (c *Connection) scopeOf(ctx context.Context) *handlerScope {
	s, _ := ctx.Value(handlerScopeKey{}).(*handlerScope)
	for s != nil && s.conn != c {
		s, _ = s.Context.Value(handlerScopeKey{}).(*handlerScope)
	}
	return s
}

// isInboundRequest reports whether ctx is (derived from) the context of a
// MethodHandler call for an inbound request (a message with a non-null id),
// as opposed to a notification.
func isInboundRequest(ctx context.Context) bool {
	s, _ := ctx.Value(handlerScopeKey{}).(*handlerScope)
	return s != nil && s.seq == 0
}

// connState is the connection's state, in one struct changed by one
// transition function (stepLocked), as golang.org/x/tools'
// internal/jsonrpc2_v2 keeps its inFlightState: the outbound calls
// awaiting a response, the inbound requests and their slots, the
// notification queue, and everything the ordering guarantees decide on.
// It lives in Connection.state, guarded by Connection.mu; other code only
// reads it (under mu), so each decision is made in one place from one
// consistent state.
type connState struct {
	// pending are the outbound calls awaiting their response, by id.
	pending map[uint64]*pendingCall

	// inflight are the inbound requests registered and not yet answered
	// (running or in the backlog), by canonical id, for $/cancel_request.
	inflight map[string]*inflightRequest
	// runningRequests counts the inbound request handlers holding a slot;
	// backlog holds, in arrival order, the requests read while every slot
	// was taken (one, unless the reader reads ahead), and backlogBytes
	// their params bytes.
	runningRequests int
	backlog         []requestJob
	backlogBytes    int

	// queue holds the notifications waiting for their handler;
	// queuedBytes is their params bytes, runningBytes those of the
	// notification in its handler. closed is set once the connection
	// ended: no notification is accepted any more.
	queue        notificationRing
	queuedBytes  int
	runningBytes int
	closed       bool

	enqueued  uint64 // notifications accepted so far
	completed uint64 // notifications whose handler has returned
	// running is the scope of the notification handler that runs, nil
	// when none does.
	running *handlerScope
	// held are the responses and ordered requests waiting for
	// notifications, in watermark order (each is held with the count
	// accepted when it arrived).
	held []*pendingCall
	// handlerCalls counts the calls made by running handlers (see
	// handlerScope) whose response has not arrived; mirrored in
	// Connection.readAheadCalls for the reader.
	handlerCalls int
}

// eventKind names a transition of connState.
type eventKind int

const (
	// evNotificationQueued: the reader accepted a notification (method,
	// params); it joins the queue with the next sequence number.
	evNotificationQueued eventKind = iota + 1
	// evHandlerStarted: the notification loop takes the queue's first
	// notification; the result is it, with its handler's scope.
	evHandlerStarted
	// evHandlerReturned: the handler of scope returned (a notification's
	// or a request's); its marker ends.
	evHandlerReturned
	// evRequestArrived: the reader read an inbound request (job): it is
	// registered, given a slot (result dispatch) or put in the backlog,
	// and under WithOrderedRequests given a barrier.
	evRequestArrived
	// evRequestDone: job's handler finished; its slot passes to the
	// backlog's first request (the result's next) or is freed.
	evRequestDone
	// evCallStarted: call is about to be written, with ctx's scope (nil
	// when ctx carries none of this connection's); it becomes pending
	// unless the connection ended (the result's ended).
	evCallStarted
	// evResponseArrived: the response to id arrived (result, err); its
	// call, when pending, is released or held.
	evResponseArrived
	// evCallAbandoned: call ends without its response (ctx, Close, write
	// failure).
	evCallAbandoned
	// evClosed: the connection ended.
	evClosed
)

// event is one transition's input.
type event struct {
	kind  eventKind
	scope *handlerScope
	call  *pendingCall
	// job is evRequestArrived's and evRequestDone's request (a value: a
	// pointer would move every request to the heap).
	job requestJob
	// id, result and err are evResponseArrived's; method and params
	// evNotificationQueued's.
	id     uint64
	result json.RawMessage
	err    *RequestError
	method string
	params json.RawMessage
}

// stepLocked is the one transition function of connState. The ordering
// rule it implements is the one stated in the Connection docs ("Calls
// from handlers"):
//
//   - a call made with a running handler's scope is released as soon as
//     its response arrives (the handler may be what the earlier
//     notifications wait for); any other call is released once every
//     notification accepted before its response has been handled;
//   - a request under WithOrderedRequests waits for the notifications
//     accepted before it, unless the notification handler that runs awaits
//     a call of its own: then the request may be the peer's step towards
//     that call's response, and it runs at once (and so does every request
//     waiting when such a call starts);
//   - while a running handler's call awaits its response the reader reads
//     ahead (Connection.readAheadCalls);
//   - a response is released by the goroutine whose event lets it go
//     (the reader for evResponseArrived, the notification loop for
//     evHandlerReturned), and one whose call has a ResponseInOrder hook is
//     handed back in stepResult.inOrder, for that goroutine to deliver
//     before it reads the next line or runs the next handler: that is the
//     response's place in wire order.
//
// It also keeps the accounting flow control waits on (slots, backlog,
// queue bounds) and wakes those waits when it changes. c.mu is held.
func (c *Connection) stepLocked(ev event) (r stepResult) {
	o := &c.state
	switch ev.kind {
	case evNotificationQueued:
		maxCount, _ := c.readAheadCap()
		o.enqueued++
		o.queuedBytes += len(ev.params)
		o.queue.push(queuedNotification{seq: o.enqueued, method: ev.method, params: ev.params}, maxCount)
		c.qcond.Signal()
	case evHandlerStarted:
		item := o.queue.pop()
		o.queuedBytes -= len(item.params)
		o.runningBytes = len(item.params)
		o.running = &handlerScope{Context: c.notifyCtx, conn: c, seq: item.seq}
		r.scope, r.method, r.params = o.running, item.method, item.params
		c.wakeReaderLocked()
	case evHandlerReturned:
		ev.scope.ended = true
		if ev.scope.seq == 0 {
			return r
		}
		o.running = nil
		o.runningBytes = 0
		o.completed = ev.scope.seq
		n := 0
		for n < len(o.held) && o.held[n].watermark <= o.completed {
			r.release(o.held[n])
			o.held[n] = nil
			n++
		}
		if n > 0 {
			o.held = o.held[n:]
			if len(o.held) == 0 {
				o.held = nil
			}
		}
		c.wakeReaderLocked()
	case evRequestArrived:
		job := &ev.job
		if c.opts.orderedRequests && o.completed < o.enqueued {
			job.barrier = &pendingCall{request: true, done: make(chan struct{})}
			if o.running != nil && o.running.calls > 0 {
				close(job.barrier.done)
			} else {
				job.barrier.watermark = o.enqueued
				o.held = append(o.held, job.barrier)
			}
		}
		// Registered at once, so a $/cancel_request read later finds it
		// even while it waits for a slot.
		o.inflight[job.idKey] = job.entry
		if o.runningRequests < c.opts.maxInflightRequests && len(o.backlog) == 0 {
			o.runningRequests++
			r.next, r.dispatch = *job, true
			return r
		}
		o.backlog = append(o.backlog, *job)
		o.backlogBytes += len(job.params)
	case evRequestDone:
		job := &ev.job
		if o.inflight[job.idKey] == job.entry {
			delete(o.inflight, job.idKey)
		}
		if len(o.backlog) == 0 || c.ctx.Err() != nil {
			o.runningRequests--
			return r
		}
		r.next = o.backlog[0]
		r.dispatch = true
		o.backlog[0] = requestJob{}
		o.backlog = o.backlog[1:]
		o.backlogBytes -= len(r.next.params)
		if len(o.backlog) == 0 {
			o.backlog = nil
			c.requestRoom.Signal()
		}
	case evCallStarted:
		if c.ctx.Err() != nil {
			r.ended = true
			return r
		}
		o.pending[ev.call.id] = ev.call
		s := ev.scope
		if s == nil || s.ended {
			return r
		}
		ev.call.scope = s
		s.calls++
		o.handlerCalls++
		c.readAheadCalls.Store(int64(o.handlerCalls))
		if s.seq != 0 && s.calls == 1 && s == o.running {
			c.releaseHeldRequestsLocked()
		}
		// The reader may be waiting for room or for a slot; the response
		// may be behind.
		c.roomCond.Signal()
		c.requestRoom.Signal()
	case evResponseArrived, evCallAbandoned:
		pc := ev.call
		if ev.kind == evResponseArrived {
			if pc = o.pending[ev.id]; pc == nil {
				return r // unknown or late: dropped, as upstream
			}
			pc.received = true
			pc.result, pc.err = ev.result, ev.err
		} else if r.received = pc.received; o.pending[pc.id] != pc {
			return r
		}
		delete(o.pending, pc.id)
		r.removed = true
		live := false
		if s := pc.scope; s != nil {
			live = !s.ended
			pc.scope = nil
			s.calls--
			o.handlerCalls--
			c.readAheadCalls.Store(int64(o.handlerCalls))
		}
		if ev.kind == evCallAbandoned {
			return r
		}
		if live || o.completed >= o.enqueued {
			r.release(pc)
			return r
		}
		pc.watermark = o.enqueued
		o.held = append(o.held, pc)
	case evClosed:
		o.closed = true
		r.drain = o.completed < o.enqueued
		c.qcond.Broadcast()
		c.roomCond.Broadcast()
		// Requests still waiting for a slot are dropped: their replies
		// could no longer be delivered.
		for _, job := range o.backlog {
			if o.inflight[job.idKey] == job.entry {
				delete(o.inflight, job.idKey)
			}
			job.entry.cancel(nil)
		}
		o.backlog, o.backlogBytes = nil, 0
		c.requestRoom.Broadcast()
	}
	return r
}

// stepResult is what a transition tells its caller to do.
type stepResult struct {
	// ended reports for evCallStarted that the connection had ended (the
	// call is not pending).
	ended bool
	// removed reports for evResponseArrived and evCallAbandoned that the
	// call was pending and is no longer; received, for evCallAbandoned,
	// that its response had arrived.
	removed, received bool
	// dispatch reports that next is to run: for evRequestArrived the
	// request itself got a slot (else it waits in the backlog), for
	// evRequestDone the backlog's first got the freed one.
	dispatch bool
	next     requestJob
	// scope, method and params are the notification evHandlerStarted
	// took from the queue, and its handler's scope.
	scope  *handlerScope
	method string
	params json.RawMessage
	// drain reports for evClosed that notifications remain to be
	// handled.
	drain bool
	// inOrder are the released responses whose call has a
	// ResponseInOrder hook: the caller hands them to runInOrder once it
	// dropped c.mu, before it goes on (see runInOrder).
	inOrder []*pendingCall
}

// release lets a response go: at once, or through r.inOrder when its
// call has a ResponseInOrder hook.
func (r *stepResult) release(pc *pendingCall) {
	if pc.inOrder != nil {
		r.inOrder = append(r.inOrder, pc)
		return
	}
	close(pc.done)
}

// releaseHeldRequestsLocked lets every ordered request still waiting for
// notifications run. c.mu is held.
func (c *Connection) releaseHeldRequestsLocked() {
	o := &c.state
	kept := o.held[:0]
	for _, pc := range o.held {
		if pc.request {
			close(pc.done)
			continue
		}
		kept = append(kept, pc)
	}
	clear(o.held[len(kept):])
	o.held = kept
	if len(o.held) == 0 {
		o.held = nil
	}
}

// heldCallError is the error of a call whose ctx ended while its response,
// already received, was held for earlier notifications. When a
// notification handler runs, the likely reason is the caller's error the
// Connection docs name: a handler waiting for a call it made with a context
// not derived from its own (the call waits for that handler). The text says
// so; errors.Is finds the ctx's cause.
func (c *Connection) heldCallError(cause error) *RequestError {
	c.mu.Lock()
	running := c.state.running != nil
	c.mu.Unlock()
	text := cause.Error()
	if running {
		text += ": the response arrived but waits for the notifications received before it, and a notification handler still runs" +
			" (a handler that waits for a call must make it with the handler's ctx, or one derived from it)"
	}
	var e *RequestError
	if errors.Is(cause, context.Canceled) {
		e = NewRequestCancelled(errorData(text))
	} else {
		e = NewInternalError(errorData(text))
	}
	e.cause = cause
	return e
}
