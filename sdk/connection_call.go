package acp

// Outbound calls: requests, their responses and the barrier, cancellation.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
)

// handleResponse hands a response to the call waiting for it, after the
// notifications received before it (the barrier).
func (c *Connection) handleResponse(env *envelope, line []byte) {
	id, ok, err := responseIDValue(env.id)
	if err != nil {
		c.logMalformed("failed to canonicalize response id", line, err)
		return
	}
	if !ok {
		return
	}
	c.mu.Lock()
	r := c.stepLocked(event{kind: evResponseArrived, id: id, result: env.result, err: env.err})
	c.mu.Unlock()
	// Released here, the response is in order before the reader reads on.
	c.runInOrder(r.inOrder)
}

// runInOrder delivers released responses whose call has a ResponseInOrder
// hook: the hook, then the response to the caller. It runs on the
// goroutine that released them (the reader, or the notification loop
// between two handlers), without c.mu, before that goroutine goes on, so
// the hook comes before any later notification's handler.
func (c *Connection) runInOrder(pcs []*pendingCall) {
	for _, pc := range pcs {
		c.callInOrderHook(pc)
		close(pc.done)
	}
}

// callInOrderHook calls pc's ResponseInOrder hook, recovering a panic.
func (c *Connection) callInOrderHook(pc *pendingCall) {
	defer func() {
		if p := recover(); p != nil {
			c.log().Error("panic in RequestTrace.ResponseInOrder", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	var err error
	if pc.err != nil {
		err = pc.err
	}
	pc.inOrder(err)
}

// SendRequest sends a request and decodes its result into T. It returns
// after the response arrived and every notification the peer sent before it
// was handled, or, for a call made with a running handler's ctx, as soon as
// the response arrived (see Connection, "Calls from handlers"). Errors are *RequestError values: the peer's error, -32602
// when params cannot be marshalled, -32603 when the write fails or the
// result does not decode into T, -32800/-32603 when ctx ends (a
// $/cancel_request is sent to the peer), and -32603 wrapping
// ErrPeerDisconnected when the connection ends first. An empty or missing
// result gives the zero T.
func SendRequest[T any](c *Connection, ctx context.Context, method string, params any) (T, error) {
	var result T
	raw, err := c.call(ctx, method, params)
	if err != nil {
		return result, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &result); err != nil {
			var zero T
			return zero, NewInternalError(errorData(err.Error()))
		}
	}
	return result, nil
}

// SendRequestNoResult sends a request whose result is ignored; otherwise as
// SendRequest.
func (c *Connection) SendRequestNoResult(ctx context.Context, method string, params any) error {
	_, err := c.call(ctx, method, params)
	return err
}

// SendNotification sends a notification. It fails with -32603 when ctx has
// already ended or the write fails, -32602 when params cannot be marshalled.
// As upstream, it still attempts the write after the peer disconnected.
func (c *Connection) SendNotification(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return NewInternalError(errorData(err.Error()))
	}
	e := c.free.getEncodeBuffer()
	if err := encodeMessage(e, 0, method, params); err != nil {
		c.free.putEncodeBuffer(e)
		return NewInvalidParams(errorData(err.Error()))
	}
	if err := c.sendLine(ctx, e, ""); err != nil {
		return NewInternalError(errorData(err.Error()))
	}
	return nil
}

// peerDisconnected is the error of a call cut short by the connection's
// end: upstream's text (what, e.g. "peer disconnected before response") when
// the peer closed its output or Close was called; otherwise the text names
// the cause too (a frame over the limit, a notification backlog over its
// cap, a read error), and errors.Is finds both ErrPeerDisconnected and the
// cause.
func (c *Connection) peerDisconnected(what string) *RequestError {
	cause := context.Cause(c.ctx)
	if cause == nil || errors.Is(cause, ErrPeerConnectionClosed) || errors.Is(cause, ErrConnectionClosed) {
		return internalErrorWithCause(what, ErrPeerDisconnected)
	}
	return internalErrorWithCause(what+": "+cause.Error(), errors.Join(ErrPeerDisconnected, cause))
}

// Texts of the peer-disconnected errors.
const (
	textDisconnectedBeforeResponse = "peer disconnected before response"
	textDisconnectedDuringBarrier  = "peer disconnected while waiting for pre-response notifications"
)

// call sends a request and waits for its (barrier-released) response.
func (c *Connection) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	trace := requestTraceOf(ctx)
	wrote := trace.wroteRequest()
	id := c.nextID.Add(1)
	e := c.free.getEncodeBuffer()
	if err := encodeMessage(e, id, method, params); err != nil {
		c.free.putEncodeBuffer(e)
		wrote(err)
		return nil, NewInvalidParams(errorData(err.Error()))
	}
	pc := &pendingCall{id: id, done: make(chan struct{}), inOrder: trace.responseInOrder()}
	// Pending before the write; a call made with a running handler's ctx
	// counts as the handler's from here: while it awaits its answer the
	// reader reads past the bounds, as the handler may be what they wait
	// for.
	scope := c.scopeOf(ctx)
	c.mu.Lock()
	r := c.stepLocked(event{kind: evCallStarted, scope: scope, call: pc})
	c.mu.Unlock()
	if r.ended {
		c.free.putEncodeBuffer(e)
		err := c.peerDisconnected(textDisconnectedBeforeResponse)
		wrote(err)
		return nil, err
	}

	busy, err := c.write(ctx, e.buf.Bytes())
	if !busy {
		c.free.putEncodeBuffer(e)
	}
	wrote(err)
	if err != nil {
		if busy {
			// Handed to the writer, which may yet deliver it: abandon the
			// call as one that was sent.
			return c.abandon(pc, ctx)
		}
		c.forgetPending(pc)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Never written, so there is nothing to cancel on the peer.
			return nil, toRequestError(context.Cause(ctx))
		}
		if errors.Is(err, ErrConnectionClosed) {
			// Close found the call waiting for its write: a pending call,
			// it fails as every pending call does.
			return nil, c.peerDisconnected(textDisconnectedBeforeResponse)
		}
		return nil, NewInternalError(errorData(err.Error()))
	}

	select {
	case <-pc.done:
		return pc.response()
	case <-c.ctx.Done():
		if c.responseReceived(pc) {
			// The peer answered, then left: the notifications it sent
			// before the answer are still being handled; the answer follows
			// them (unless Close or the caller's ctx ends the wait).
			select {
			case <-pc.done:
				return pc.response()
			case <-c.closed:
			case <-ctx.Done():
			}
		}
		return c.abandon(pc, ctx)
	case <-ctx.Done():
		return c.abandon(pc, ctx)
	}
}

// responseReceived reports whether pc's response has arrived.
func (c *Connection) responseReceived(pc *pendingCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return pc.received
}

// response returns a delivered response.
func (pc *pendingCall) response() (json.RawMessage, error) {
	if pc.err != nil {
		return nil, pc.err
	}
	return pc.result, nil
}

// forgetPending removes a call that will not be answered.
func (c *Connection) forgetPending(pc *pendingCall) {
	c.mu.Lock()
	c.stepLocked(event{kind: evCallAbandoned, call: pc})
	c.mu.Unlock()
}

// abandon ends a wait cut short by the connection ending or the caller's
// ctx ending. A delivered response still wins; a disconnect wins over the
// caller's ctx.
func (c *Connection) abandon(pc *pendingCall, ctx context.Context) (json.RawMessage, error) {
	c.mu.Lock()
	received := c.stepLocked(event{kind: evCallAbandoned, call: pc}).received
	c.mu.Unlock()
	if received {
		select {
		case <-pc.done:
			return pc.response()
		default:
		}
	}
	if c.ctx.Err() != nil {
		if received {
			return nil, c.peerDisconnected(textDisconnectedDuringBarrier)
		}
		return nil, c.peerDisconnected(textDisconnectedBeforeResponse)
	}
	if received {
		return nil, c.heldCallError(context.Cause(ctx))
	}
	c.queueCancelRequest(pc.id)
	return nil, toRequestError(context.Cause(ctx))
}

// queueCancelRequest sends $/cancel_request for an abandoned call in the
// background (so a blocked writer cannot hold up the caller), dropping it
// when too many are queued.
func (c *Connection) queueCancelRequest(id uint64) {
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	if len(c.cancelQueue) >= maxPendingCancelRequests {
		c.mu.Unlock()
		c.log().Debug("dropping $/cancel_request due to full queue", "queue_len", maxPendingCancelRequests)
		return
	}
	c.cancelQueue = append(c.cancelQueue, id)
	start := !c.cancelSenderRunning && !c.stoppedClosed
	if start {
		c.cancelSenderRunning = true
		c.goroutines++
	}
	c.mu.Unlock()
	if start {
		go c.sendCancelRequests()
	}
}

// cancelRequestParams is the params object of $/cancel_request.
type cancelRequestParams struct {
	RequestID json.RawMessage `json:"requestId"`
}

// sendCancelRequests drains the cancel queue, then returns.
func (c *Connection) sendCancelRequests() {
	defer c.goroutineDone()
	for {
		c.mu.Lock()
		if len(c.cancelQueue) == 0 || c.ctx.Err() != nil {
			c.cancelQueue = nil
			c.cancelSenderRunning = false
			c.mu.Unlock()
			return
		}
		id := c.cancelQueue[0]
		c.cancelQueue = c.cancelQueue[1:]
		c.mu.Unlock()
		params := cancelRequestParams{RequestID: appendUintID(nil, id)}
		if err := c.SendNotification(context.Background(), methodCancelRequest, params); err != nil {
			c.log().Debug("failed to send $/cancel_request", "err", err)
		}
	}
}
