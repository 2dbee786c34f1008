package acp

// Inbound requests: slots, the backlog under flow control, workers and
// $/cancel_request.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// startRequest starts the handler of an inbound request on a worker
// goroutine; when every slot (WithMaxInflightRequests) is taken it queues
// the request and waits for a slot (see waitForRequestSlotLocked). false
// stops the read loop (the connection ended).
func (c *Connection) startRequest(rawID json.RawMessage, method string, params json.RawMessage) bool {
	idKey, err := canonicalIDKey(rawID)
	if err != nil {
		c.log().Error("failed to canonicalize inbound request id", "err", err, "id", string(rawID))
		idKey = string(rawID)
	}
	reqCtx, cancel := context.WithCancelCause(c.ctx)
	entry := &inflightRequest{cancel: cancel}
	job := requestJob{ctx: reqCtx, entry: entry, idKey: idKey, rawID: rawID, method: method, params: params}
	// On the reader goroutine, so an ordered request's watermark is
	// exactly the notifications that preceded it on the wire.
	c.mu.Lock()
	if r := c.stepLocked(event{kind: evRequestArrived, job: job}); r.dispatch {
		c.mu.Unlock()
		c.dispatchRequest(r.next)
		return true
	}
	err = c.waitForRequestSlotLocked()
	ended := c.ctx.Err() != nil
	c.mu.Unlock()
	if err != nil {
		c.log().Error("request backlog reached its cap while a handler awaited a response; closing connection", "err", err)
		c.shutdown(err)
		return false
	}
	return !ended
}

// waitForRequestSlotLocked is flow control for inbound requests: while
// requests wait for a slot, the reader waits here, before reading the next
// line, so the peer's writes wait in the pipe; no request is refused. A
// peer that reads its replies therefore has at most the configured number
// of handlers running and one request waiting.
//
// While a handler's call awaits its response, that
// response may sit in the pipe behind further requests, and the handlers
// holding the slots may be waiting for it; the reader then reads on,
// queueing requests, up to the read-ahead cap (as many requests as the
// notification read-ahead cap, and as many params bytes). At the cap it
// returns an error wrapping ErrRequestBacklogOverflow, with which the
// connection ends rather than hang. c.mu is held.
func (c *Connection) waitForRequestSlotLocked() error {
	o := &c.state
	for len(o.backlog) > 0 && c.ctx.Err() == nil {
		if c.readAheadCalls.Load() == 0 {
			c.requestRoom.Wait()
			continue
		}
		maxCount, maxBytes := c.readAheadCap()
		if len(o.backlog) >= maxCount || o.backlogBytes >= maxBytes {
			return fmt.Errorf("%w: %d requests (%d params bytes) waiting for a slot while a handler awaited a response (read-ahead cap %d requests, %d bytes)",
				ErrRequestBacklogOverflow, len(o.backlog), o.backlogBytes, maxCount, maxBytes)
		}
		return nil
	}
	return nil
}

// dispatchRequest hands a request that holds a slot to an idle worker, or
// starts one.
func (c *Connection) dispatchRequest(job requestJob) {
	select {
	case c.requestJobs <- job: // an idle worker takes it
	default:
		c.mu.Lock()
		c.goroutines++
		c.mu.Unlock()
		go c.requestWorker(job)
	}
}

// releaseRequestSlot ends job's hold on its slot and passes the slot to the
// first request of the backlog (see evRequestDone).
func (c *Connection) releaseRequestSlot(job requestJob) {
	c.mu.Lock()
	r := c.stepLocked(event{kind: evRequestDone, job: job})
	c.mu.Unlock()
	if r.dispatch {
		c.dispatchRequest(r.next)
	}
}

// requestJob is an inbound request handed to a worker goroutine.
type requestJob struct {
	ctx    context.Context
	entry  *inflightRequest
	idKey  string
	rawID  json.RawMessage
	method string
	params json.RawMessage
	// barrier, under WithOrderedRequests, is released once the
	// notifications received before the request have been handled.
	barrier *pendingCall
}

// requestWorkerIdle is how long a request worker waits for the next request
// before it exits.
const requestWorkerIdle = 5 * time.Second

// requestWorker runs inbound requests, each to completion, then waits a
// while for the next one. Reusing workers keeps their grown stacks: a fresh
// goroutine per request (as upstream) spends much of a round trip growing
// its stack through the decode and dispatch frames.
func (c *Connection) requestWorker(job requestJob) {
	defer c.goroutineDone()
	var idle *time.Timer
	for {
		c.runRequest(job)
		if idle == nil {
			idle = time.NewTimer(requestWorkerIdle)
		} else {
			idle.Reset(requestWorkerIdle)
		}
		select {
		case job = <-c.requestJobs:
			idle.Stop()
		case <-idle.C:
			return
		case <-c.ctx.Done():
			idle.Stop()
			return
		}
	}
}

// runRequest runs the handler of one inbound request and sends the reply.
func (c *Connection) runRequest(job requestJob) {
	var result any
	var rerr *RequestError
	if job.barrier != nil {
		select {
		case <-job.barrier.done:
		case <-job.ctx.Done():
		}
	}
	if c.handler == nil {
		rerr = NewMethodNotFound(job.method)
	} else {
		scope := &handlerScope{Context: job.ctx, conn: c}
		result, rerr = c.invoke(scope, job.method, job.params)
		c.mu.Lock()
		c.stepLocked(event{kind: evHandlerReturned, scope: scope})
		c.mu.Unlock()
	}
	// Free the slot before replying, so a peer that sends its next request
	// as soon as it sees this reply always finds room.
	c.releaseRequestSlot(job)
	job.entry.cancel(nil)
	c.writeResponse(job.rawID, result, rerr)
}

// handleCancelRequest cancels the in-flight inbound request named by an
// inbound $/cancel_request.
func (c *Connection) handleCancelRequest(params json.RawMessage) {
	requestID, err := cancelRequestRequestID(params)
	if err != nil {
		c.log().Error("failed to parse $/cancel_request params", "err", err)
		return
	}
	if len(requestID) == 0 {
		c.log().Error("received $/cancel_request without requestId")
		return
	}
	idKey, err := canonicalIDKey(requestID)
	if err != nil {
		c.log().Error("failed to canonicalize $/cancel_request requestId", "err", err, "requestId", string(requestID))
		idKey = string(requestID)
	}
	c.mu.Lock()
	entry := c.state.inflight[idKey]
	c.mu.Unlock()
	if entry != nil {
		entry.cancel(context.Canceled)
	}
}
