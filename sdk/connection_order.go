package acp

import (
	"context"
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
	// ended and calls are guarded by conn.qmu and changed only by
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

// orderState is everything the ordering guarantees decide on: how many
// notifications were accepted and handled, which notification handler runs,
// which responses and ordered requests wait for notifications, and how
// many handler calls await a response (read-ahead). It lives in
// Connection.order, guarded by qmu, and only stepLocked changes it, so each
// decision is made in one place from one consistent state.
type orderState struct {
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

// orderEventKind names a transition of orderState.
type orderEventKind int

const (
	// evNotificationQueued: the reader accepted a notification; the result
	// is its sequence number.
	evNotificationQueued orderEventKind = iota + 1
	// evHandlerStarted: a notification handler (scope.seq > 0) starts.
	evHandlerStarted
	// evHandlerReturned: the handler of scope returned (a notification's
	// or a request's); its marker ends.
	evHandlerReturned
	// evRequestArrived: under WithOrderedRequests, a request arrived;
	// call is its barrier, held or released at once.
	evRequestArrived
	// evCallStarted: call is about to be written, with ctx's scope (nil
	// when ctx carries none of this connection's).
	evCallStarted
	// evResponseArrived: call's response arrived; it is released or held.
	evResponseArrived
	// evCallAbandoned: call ends without its response (ctx, Close, write
	// failure).
	evCallAbandoned
)

// orderEvent is one transition's input.
type orderEvent struct {
	kind  orderEventKind
	scope *handlerScope
	call  *pendingCall
}

// stepLocked is the one transition function of orderState. The rule it
// implements is the one stated in the Connection docs ("Calls from
// handlers"):
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
// c.qmu is held.
func (c *Connection) stepLocked(ev orderEvent) (r stepResult) {
	o := &c.order
	switch ev.kind {
	case evNotificationQueued:
		o.enqueued++
		r.seq = o.enqueued
	case evHandlerStarted:
		o.running = ev.scope
	case evHandlerReturned:
		ev.scope.ended = true
		if ev.scope.seq == 0 {
			return r
		}
		o.running = nil
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
	case evRequestArrived:
		if o.completed >= o.enqueued || o.running != nil && o.running.calls > 0 {
			close(ev.call.done)
			return r
		}
		ev.call.watermark = o.enqueued
		o.held = append(o.held, ev.call)
	case evCallStarted:
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
		// The reader may be waiting for room; the response may be behind.
		c.roomCond.Signal()
		r.handlerCall = true
	case evResponseArrived, evCallAbandoned:
		pc := ev.call
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
	}
	return r
}

// stepResult is what a transition asks of its caller.
type stepResult struct {
	// seq is the sequence number evNotificationQueued gave.
	seq uint64
	// handlerCall reports for evCallStarted that the call counts as a
	// handler's.
	handlerCall bool
	// inOrder are the released responses whose call has a
	// ResponseInOrder hook: the caller hands them to runInOrder once it
	// dropped c.qmu, before it goes on (see runInOrder).
	inOrder []*pendingCall
}

// release lets a response (or an ordered request) go: at once, or through
// r.inOrder when its call has a ResponseInOrder hook.
func (r *stepResult) release(pc *pendingCall) {
	if pc.inOrder != nil {
		r.inOrder = append(r.inOrder, pc)
		return
	}
	close(pc.done)
}

// releaseHeldRequestsLocked lets every ordered request still waiting for
// notifications run. c.qmu is held.
func (c *Connection) releaseHeldRequestsLocked() {
	o := &c.order
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
	c.qmu.Lock()
	running := c.order.running != nil
	c.qmu.Unlock()
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
