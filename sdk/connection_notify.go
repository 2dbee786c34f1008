package acp

// Inbound notifications: the bounded queue under flow control, read-ahead
// and the loop that runs their handlers one at a time.

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
)

// enqueueNotification queues a notification for the ordered handler; false
// when the connection ended (or, under WithCloseOnNotificationOverflow, the
// queue overflowed and the connection was closed).
//
// Flow control: once the queue holds WithMaxQueuedNotifications
// notifications, or the params of the queued notifications and of the one in
// its handler reach WithMaxQueuedNotificationBytes, the reader waits here,
// before reading the next line, until the handler has drained them to half
// the bounds: the peer's writes then wait in the pipe. Nothing is dropped or
// reordered, and the queue's memory stays within the bounds (plus the one
// notification always accepted).
//
// While a handler's call (made with a running handler's ctx, see
// stepLocked) waits for its response, that response may sit in the pipe
// behind notifications, and the handler cannot return before it arrives; the reader then keeps reading and
// queueing past the bound, up to the read-ahead cap (readAheadCap). At the
// cap the connection ends with an error wrapping
// ErrNotificationQueueOverflow that names the cap, rather than hang.
func (c *Connection) enqueueNotification(method string, params json.RawMessage) bool {
	c.mu.Lock()
	o := &c.state
	if o.closed {
		c.mu.Unlock()
		return false
	}
	if c.opts.closeOnOverflow && (o.queue.len() >= c.opts.maxQueuedNotifications ||
		(o.queue.len() > 0 && o.queuedBytes+len(params) > c.opts.maxQueuedNotificationBytes)) {
		queued, queuedBytes := o.queue.len(), o.queuedBytes
		c.mu.Unlock()
		c.log().Error("failed to queue notification; closing connection",
			"err", ErrNotificationQueueOverflow, "capacity", c.opts.maxQueuedNotifications, "queued", queued,
			"queued_bytes", queuedBytes, "max_bytes", c.opts.maxQueuedNotificationBytes)
		c.shutdown(ErrNotificationQueueOverflow)
		return false
	}
	c.stepLocked(event{kind: evNotificationQueued, method: method, params: params})
	for waited := false; !c.opts.closeOnOverflow && !o.closed && (c.overBoundLocked() || waited && !c.drainedLocked()); {
		if c.readAheadCalls.Load() == 0 {
			// Once stopped, resume only when the queue has drained to half
			// its bounds: one wake-up per half queue, not per notification.
			waited = true
			c.readerWaiting = true
			c.roomCond.Wait()
			c.readerWaiting = false
			continue
		}
		if err := c.overReadAheadCapLocked(); err != nil {
			c.mu.Unlock()
			c.log().Error("notification backlog reached its cap while a notification handler awaited a response; closing connection", "err", err)
			c.shutdown(err)
			return false
		}
		break
	}
	closed := o.closed
	c.mu.Unlock()
	return !closed
}

// Read-ahead caps: how far past the queue bounds the reader goes while a
// handler's call awaits its response. The effective
// cap is the larger of these and the configured bounds.
const (
	readAheadMaxNotifications = 1 << 18   // 262,144 notifications
	readAheadMaxBytes         = 256 << 20 // 256 MiB of params
)

// readAheadCap returns the effective read-ahead cap (count, params bytes).
func (c *Connection) readAheadCap() (int, int) {
	return max(c.opts.maxQueuedNotifications, c.opts.readAheadNotifications),
		max(c.opts.maxQueuedNotificationBytes, c.opts.readAheadBytes)
}

// overBoundLocked reports whether the queue is at its bounds, so the reader
// must not read further (unless a handler's call waits). c.mu is held.
func (c *Connection) overBoundLocked() bool {
	o := &c.state
	return o.queue.len() >= c.opts.maxQueuedNotifications ||
		o.queuedBytes+o.runningBytes >= c.opts.maxQueuedNotificationBytes
}

// drainedLocked reports whether a reader stopped at the bounds may resume:
// the queue is down to half its bounds. c.mu is held.
func (c *Connection) drainedLocked() bool {
	o := &c.state
	return o.queue.len() <= c.opts.maxQueuedNotifications/2 &&
		o.queuedBytes+o.runningBytes <= c.opts.maxQueuedNotificationBytes/2
}

// overReadAheadCapLocked returns the error to end the connection with when
// the queue reached the read-ahead cap, or nil. c.mu is held.
func (c *Connection) overReadAheadCapLocked() error {
	o := &c.state
	maxCount, maxBytes := c.readAheadCap()
	if o.queue.len() < maxCount && o.queuedBytes+o.runningBytes < maxBytes {
		return nil
	}
	return fmt.Errorf("%w: %d notifications (%d params bytes) waiting while a notification handler awaited a response (read-ahead cap %d notifications, %d bytes)",
		ErrNotificationQueueOverflow, o.queue.len(), o.queuedBytes+o.runningBytes, maxCount, maxBytes)
}

// wakeReaderLocked wakes the reader stopped at the bounds once the queue
// drained enough. c.mu is held.
func (c *Connection) wakeReaderLocked() {
	if c.readerWaiting && c.drainedLocked() {
		c.roomCond.Signal()
	}
}

// notificationLoop runs the notification handlers, one at a time, in order,
// each with its own scope (see handlerScope).
func (c *Connection) notificationLoop() {
	defer c.goroutineDone()
	var done *handlerScope
	for {
		c.mu.Lock()
		if done != nil {
			if inOrder := c.notificationReturnedLocked(done); inOrder != nil {
				// Before the next handler starts (see runInOrder).
				c.mu.Unlock()
				c.runInOrder(inOrder)
				c.mu.Lock()
			}
		}
		for c.state.queue.len() == 0 && !c.state.closed {
			c.qcond.Wait()
		}
		if c.state.queue.len() == 0 {
			if c.drainTimer != nil {
				c.drainTimer.Stop()
			}
			c.mu.Unlock()
			c.notifyCancel(context.Cause(c.ctx))
			return
		}
		scope, method, params := c.nextNotificationLocked()
		c.mu.Unlock()

		c.handleNotification(scope, method, params)
		done = scope
	}
}

// notificationReturnedLocked steps evHandlerReturned for the notification
// handler of s and returns the responses to deliver in order. It is kept
// out of line, as is nextNotificationLocked, so that the transition's
// event and result are not in the frame of notificationLoop, which an idle
// connection's goroutine keeps while it waits. c.mu is held.
//
//go:noinline
func (c *Connection) notificationReturnedLocked(s *handlerScope) []*pendingCall {
	return c.stepLocked(event{kind: evHandlerReturned, scope: s}).inOrder
}

// nextNotificationLocked steps evHandlerStarted: the queue's first
// notification, with its handler's scope. c.mu is held.
//
//go:noinline
func (c *Connection) nextNotificationLocked() (*handlerScope, string, json.RawMessage) {
	r := c.stepLocked(event{kind: evHandlerStarted})
	return r.scope, r.method, r.params
}

// handleNotification runs the handler for one notification.
func (c *Connection) handleNotification(ctx context.Context, method string, params json.RawMessage) {
	if c.handler == nil {
		return
	}
	_, rerr := c.invoke(ctx, method, params)
	if rerr == nil {
		return
	}
	// Unknown extension notifications are ignored silently, as ACP asks.
	if rerr.Code == -32601 && strings.HasPrefix(method, "_") {
		return
	}
	c.log().Error("failed to handle notification", "method", method, "err", rerr)
}

// invoke calls the handler, turning a panic into -32603.
func (c *Connection) invoke(ctx context.Context, method string, params json.RawMessage) (result any, rerr *RequestError) {
	defer func() {
		if p := recover(); p != nil {
			c.log().Error("panic in method handler", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, rerr = nil, NewInternalError(errorData(fmt.Sprintf("panic in handler for %s: %v", method, p)))
		}
	}()
	return c.handler(ctx, method, params)
}
