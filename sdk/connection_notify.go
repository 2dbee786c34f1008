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
	c.qmu.Lock()
	if c.queueClosed {
		c.qmu.Unlock()
		return false
	}
	if c.opts.closeOnOverflow && (c.queue.len() >= c.opts.maxQueuedNotifications ||
		(c.queue.len() > 0 && c.queuedBytes+len(params) > c.opts.maxQueuedNotificationBytes)) {
		queued, queuedBytes := c.queue.len(), c.queuedBytes
		c.qmu.Unlock()
		c.log().Error("failed to queue notification; closing connection",
			"err", ErrNotificationQueueOverflow, "capacity", c.opts.maxQueuedNotifications, "queued", queued,
			"queued_bytes", queuedBytes, "max_bytes", c.opts.maxQueuedNotificationBytes)
		c.shutdown(ErrNotificationQueueOverflow)
		return false
	}
	maxCount, _ := c.readAheadCap()
	c.queuedBytes += len(params)
	seq := c.stepLocked(orderEvent{kind: evNotificationQueued}).seq
	c.queue.push(queuedNotification{seq: seq, method: method, params: params}, maxCount)
	c.qcond.Signal()
	for waited := false; !c.opts.closeOnOverflow && !c.queueClosed && (c.overBoundLocked() || waited && !c.drainedLocked()); {
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
			c.qmu.Unlock()
			c.log().Error("notification backlog reached its cap while a notification handler awaited a response; closing connection", "err", err)
			c.shutdown(err)
			return false
		}
		break
	}
	closed := c.queueClosed
	c.qmu.Unlock()
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
// must not read further (unless a handler's call waits). c.qmu is held.
func (c *Connection) overBoundLocked() bool {
	return c.queue.len() >= c.opts.maxQueuedNotifications ||
		c.queuedBytes+c.runningBytes >= c.opts.maxQueuedNotificationBytes
}

// drainedLocked reports whether a reader stopped at the bounds may resume:
// the queue is down to half its bounds. c.qmu is held.
func (c *Connection) drainedLocked() bool {
	return c.queue.len() <= c.opts.maxQueuedNotifications/2 &&
		c.queuedBytes+c.runningBytes <= c.opts.maxQueuedNotificationBytes/2
}

// overReadAheadCapLocked returns the error to end the connection with when
// the queue reached the read-ahead cap, or nil. c.qmu is held.
func (c *Connection) overReadAheadCapLocked() error {
	maxCount, maxBytes := c.readAheadCap()
	if c.queue.len() < maxCount && c.queuedBytes+c.runningBytes < maxBytes {
		return nil
	}
	return fmt.Errorf("%w: %d notifications (%d params bytes) waiting while a notification handler awaited a response (read-ahead cap %d notifications, %d bytes)",
		ErrNotificationQueueOverflow, c.queue.len(), c.queuedBytes+c.runningBytes, maxCount, maxBytes)
}

// wakeReaderLocked wakes the reader stopped at the bounds once the queue
// drained enough. c.qmu is held.
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
		c.qmu.Lock()
		if done != nil {
			r := c.stepLocked(orderEvent{kind: evHandlerReturned, scope: done})
			c.runningBytes = 0
			c.wakeReaderLocked()
			if r.inOrder != nil {
				// Before the next handler starts (see runInOrder).
				c.qmu.Unlock()
				c.runInOrder(r.inOrder)
				c.qmu.Lock()
			}
		}
		for c.queue.len() == 0 && !c.queueClosed {
			c.qcond.Wait()
		}
		if c.queue.len() == 0 {
			if c.drainTimer != nil {
				c.drainTimer.Stop()
			}
			c.qmu.Unlock()
			c.notifyCancel(context.Cause(c.ctx))
			return
		}
		item := c.queue.pop()
		c.queuedBytes -= len(item.params)
		c.runningBytes = len(item.params)
		scope := &handlerScope{Context: c.notifyCtx, conn: c, seq: item.seq}
		c.stepLocked(orderEvent{kind: evHandlerStarted, scope: scope})
		c.wakeReaderLocked()
		c.qmu.Unlock()

		c.handleNotification(scope, item.method, item.params)
		done = scope
	}
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
