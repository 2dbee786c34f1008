package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// notificationDrainTimeout bounds how long queued notifications keep a
	// live context after the connection ends.
	notificationDrainTimeout = 5 * time.Second

	// maxPendingCancelRequests bounds the outbound $/cancel_request queue;
	// beyond it cancellations are dropped (logged at Debug), as upstream.
	maxPendingCancelRequests = 1024

	// maxLoggedLineBytes caps how much of a malformed line is logged.
	maxLoggedLineBytes = 4096

	// methodCancelRequest is the JSON-RPC cancellation notification.
	methodCancelRequest = "$/cancel_request"
)

// MethodHandler answers one inbound message. For a request (non-null id) the
// result, or the error, is sent back; for a notification the result is
// discarded and an error is only logged. ctx is cancelled when the peer
// cancels the request ($/cancel_request) or the connection ends.
type MethodHandler func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError)

// Connection is a JSON-RPC 2.0 connection over newline-delimited JSON, the
// transport under ClientSideConnection and AgentSideConnection.
//
// Inbound requests each run on a worker goroutine, at most 1024 at a time
// by default (WithMaxInflightRequests); inbound notifications run one at a
// time, in arrival order, on one goroutine fed by a bounded queue. Both are
// under flow control: when every request slot is taken, or the
// notification queue is full, the connection stops reading from the peer
// until a handler catches up, so the peer's writes wait in the pipe;
// nothing is refused, dropped or reordered for load. Lines are written by
// one writer goroutine: every send returns when its ctx ends or the
// connection is closed, even while the peer does not read. An outbound
// request returns only after every notification the peer sent before its
// response has been handled (the response barrier), so, for example, all
// session/update notifications sent before a session/prompt result are
// seen before Prompt returns.
//
// Memory bound: with the defaults, what the connection holds of its peer's
// input is at most 1024 running request handlers (their params) plus one
// request waiting for a slot, 1024 queued notifications or 16 MiB of their
// params (WithMaxQueuedNotifications, WithMaxQueuedNotificationBytes; one
// notification of any size is always accepted), and the line being read
// (at most 64 MiB). Only while a call made from (or while) a handler awaits
// its response does the reader read past these bounds, up to the
// read-ahead cap of 262,144 notifications or requests and 256 MiB of
// params each; reaching it ends the connection with an error wrapping
// ErrNotificationQueueOverflow or ErrRequestBacklogOverflow, rather than
// hang.
//
// Memory for large frames: a line is read into one buffer of about its size
// (sized from the previous long line; the first long line is read in pieces
// and joined, about twice its size for that moment), the reader lets go of
// each line once dispatched, and it stops reading while the queue holds
// WithMaxQueuedNotificationBytes (16 MiB by default), so a stream of 64 MiB
// frames keeps one frame reachable at a time. A large string in inbound
// params shares the frame's memory (see sharedString) rather than doubling
// it.
//
// Calls from handlers never deadlock, whatever their context. A request a
// notification handler sends skips the response barrier, which could never
// be reached while that handler runs: the SDK recognises such a call by its
// context (the handler's ctx or one derived from it, from any goroutine) or
// by the goroutine it is made on (the one running notification handlers,
// with any context, e.g. context.Background() with a timeout). The
// ordering consequence is small: the response to such a call may be
// returned before the notifications that arrived after the running one
// (and before the response) have been handled; they are still handled
// afterwards, in order. A goroutine the handler starts and waits for is not
// the handler's: give it the handler's ctx. While any call made with a
// handler's ctx, or made while a handler (of a notification or a request)
// runs, awaits its response, the reader keeps reading past the queue and
// slot bounds, up to the read-ahead cap, since that response may be in the
// pipe behind them.
//
// Strict JSON-RPC 2.0: a line that starts like JSON but is not valid gets
// -32700 with a null id; a batch (top-level array) gets one -32600 with a
// null id (ACP does not use batches); a request whose id is not a string,
// number or null gets -32600 with a null id; any other message meant as a
// request that is not valid JSON-RPC gets -32600 (echoing its id when it is
// a string or number). What cannot be answered (a malformed response, text
// that is not JSON) is logged at Error, at most 10 lines a second per
// connection.
//
// Nothing a connection uses is shared with another connection or outlives
// it (no process-wide pools of channels, buffers, timers or goroutines), so
// connections may be created and closed inside testing/synctest bubbles,
// many per process; after Close and Wait none of its goroutines remain.
//
// A panic in a handler is recovered and logged with its stack; a request is
// answered -32603 and the connection lives on.
//
// Beyond upstream, Close, Wait and Err give control over the lifecycle.
type Connection struct {
	w       io.Writer
	r       io.Reader
	handler MethodHandler
	opts    connectionOptions
	logger  atomic.Pointer[slog.Logger]
	// free recycles this connection's encode buffers and write results.
	free freeLists
	// malformedLog throttles the log of malformed inbound messages.
	malformedLog logThrottle

	// writeSem serialises writes (one line per Write). A sender takes it,
	// hands its line to the writer goroutine (writeLine), which writes it,
	// reports on the sender's done channel and then releases writeSem.
	// Senders wait on channels only, so a sender whose ctx ends, or a Close,
	// stops waiting even while the write itself is blocked on a peer that
	// does not read.
	writeSem  chan struct{}
	writeLine chan writeJob
	// requestJobs hands inbound requests to idle request workers.
	requestJobs chan requestJob
	// closed is closed by Close.
	closed chan struct{}
	nextID atomic.Uint64

	// ctx ends when the connection ends; its cause is the reason.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// notifyCtx is given to notification handlers. It outlives ctx until the
	// queued notifications are drained (or notificationDrainTimeout passes),
	// so the last messages a peer sent before leaving are still handled.
	notifyCtx    context.Context
	notifyCancel context.CancelCauseFunc

	// mu guards pending, inflight, the request backlog, the cancel queue
	// and goroutine accounting.
	mu       sync.Mutex
	pending  map[uint64]*pendingCall
	inflight map[string]*inflightRequest
	// runningRequests counts the inbound request handlers holding a slot;
	// backlog holds, in arrival order, the requests read while every slot
	// was taken (one, unless the reader reads ahead), and backlogBytes
	// their params bytes. requestRoom wakes the reader waiting for the
	// backlog to empty (flow control, see waitForRequestSlotLocked).
	runningRequests     int
	backlog             []requestJob
	backlogBytes        int
	requestRoom         sync.Cond
	cancelQueue         []uint64
	cancelSenderRunning bool
	goroutines          int
	stoppedClosed       bool
	stopped             chan struct{}

	// qmu guards the notification queue and the barrier state.
	qmu sync.Mutex
	// qcond wakes the notification loop; roomCond the reader waiting for
	// room in the queue (flow control).
	qcond        sync.Cond
	roomCond     sync.Cond
	queue        notificationRing
	queuedBytes  int // params bytes of the queued notifications
	runningBytes int // params bytes of the notification in its handler
	// readerWaiting is set while the reader waits for room (flow control).
	readerWaiting bool
	queueClosed   bool
	enqueuedSeq   uint64 // notifications accepted so far
	completedSeq  uint64 // notifications whose handler has returned
	deferred      []*pendingCall
	drainTimer    *time.Timer

	// runningSeq is the sequence number of the notification whose handler
	// runs (0 when none); written under qmu. notifyGoroutine identifies the
	// goroutine notification handlers run on (see goroutineID).
	runningSeq      atomic.Uint64
	notifyGoroutine atomic.Uint64

	// readAheadCalls counts the outbound calls made while a handler of this
	// connection ran (or with a notification handler's context) whose
	// response has not arrived; while it is non-zero the reader reads past
	// the notification and request bounds, up to the read-ahead caps, since
	// a handler may be waiting for that response (see enqueueNotification
	// and waitForRequestSlotLocked).
	readAheadCalls atomic.Int64

	shutdownOnce sync.Once
	closeOnce    sync.Once
	closeErr     error
}

// pendingCall is an outbound request waiting for its response.
type pendingCall struct {
	id uint64
	// noBarrier is set for calls made by a notification handler: with (a
	// context derived from) its context, or on its goroutine.
	noBarrier bool
	// readAhead is set for calls counted in Connection.readAheadCalls.
	readAhead bool
	// received is set (under Connection.mu) when the response has arrived.
	received bool
	// watermark is the last notification the response must wait for.
	watermark uint64
	// result and err are written before done is closed.
	result json.RawMessage
	err    *RequestError
	done   chan struct{}
}

// inflightRequest is an inbound request whose handler is running.
type inflightRequest struct {
	cancel context.CancelCauseFunc
}

// queuedNotification is an inbound notification waiting for its handler.
type queuedNotification struct {
	seq    uint64
	method string
	params json.RawMessage
}

// Context keys.
type (
	inboundRequestKey  struct{}
	notificationCtxKey struct{}
)

// isInboundRequest reports whether ctx is the context of a MethodHandler
// call for an inbound request (a message with a non-null id), as opposed to
// a notification.
func isInboundRequest(ctx context.Context) bool {
	v, _ := ctx.Value(inboundRequestKey{}).(bool)
	return v
}

// NewConnection starts a connection that writes to peerInput (what the peer
// reads) and reads from peerOutput (what the peer writes), handing inbound
// messages to handler. A nil handler answers every request -32601.
func NewConnection(handler MethodHandler, peerInput io.Writer, peerOutput io.Reader, opts ...ConnectionOption) *Connection {
	c := &Connection{
		w:           peerInput,
		r:           peerOutput,
		handler:     handler,
		opts:        applyConnectionOptions(opts),
		pending:     make(map[uint64]*pendingCall),
		inflight:    make(map[string]*inflightRequest),
		stopped:     make(chan struct{}),
		writeSem:    make(chan struct{}, 1),
		writeLine:   make(chan writeJob),
		requestJobs: make(chan requestJob),
		closed:      make(chan struct{}),
	}
	c.qcond.L = &c.qmu
	c.roomCond.L = &c.qmu
	c.requestRoom.L = &c.mu
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	inbound, inboundCancel := context.WithCancelCause(context.Background())
	c.notifyCtx = context.WithValue(inbound, notificationCtxKey{}, c)
	c.notifyCancel = inboundCancel
	c.goroutines = 3
	go c.readLoop()
	go c.notificationLoop()
	go c.writeLoop()
	return c
}

// SetLogger sets the logger for the connection's diagnostics (default
// slog.Default()). Unlike upstream it is safe to call at any time.
func (c *Connection) SetLogger(l *slog.Logger) { c.logger.Store(l) }

func (c *Connection) log() *slog.Logger {
	if l := c.logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// Done returns a channel closed when the connection ends: the peer closed
// its output, reading failed, the notification queue overflowed, a line
// exceeded the frame limit, or Close was called.
func (c *Connection) Done() <-chan struct{} { return c.ctx.Done() }

// Err returns nil while the connection is open, then why it ended:
// ErrPeerConnectionClosed, ErrConnectionClosed, ErrNotificationQueueOverflow,
// ErrLineTooLong or the read error.
func (c *Connection) Err() error {
	if c.ctx.Err() == nil {
		return nil
	}
	return context.Cause(c.ctx)
}

// Close ends the connection with cause ErrConnectionClosed: pending outbound
// calls fail with the peer-disconnected errors, sends waiting for or blocked
// in a write return ErrConnectionClosed, in-flight inbound handlers see their
// context cancelled, and notifications already queued are still handled. It then closes peerInput and peerOutput when they implement
// io.Closer (once each, once if they are the same value), which unblocks the
// read goroutine and tells the peer we are gone (when peerOutput is no
// io.Closer, or its Close does not interrupt a pending Read, as with a
// blocking os.Stdin, the read goroutine stays until that Read returns, and
// Wait waits for it). Close is idempotent; it returns the error of closing the
// streams, from the first call.
func (c *Connection) Close() error {
	c.shutdown(ErrConnectionClosed)
	c.closeOnce.Do(func() {
		close(c.closed)
		var errs []error
		wc, wok := c.w.(io.Closer)
		rc, rok := c.r.(io.Closer)
		if wok {
			errs = append(errs, wc.Close())
		}
		if rok && !(wok && sameValue(wc, rc)) {
			errs = append(errs, rc.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// sameValue reports whether two closers are the same comparable value.
func sameValue(a, b io.Closer) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// Wait blocks until the connection has ended and every goroutine it started
// has returned (handlers included), or ctx ends. It returns nil after a
// clean end (the peer closed its output, or Close was called), the cause
// otherwise (see Err), or ctx's error.
func (c *Connection) Wait(ctx context.Context) error {
	select {
	case <-c.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := c.Err()
	if errors.Is(err, ErrPeerConnectionClosed) || errors.Is(err, ErrConnectionClosed) {
		return nil
	}
	return err
}

// goroutineDone accounts for a goroutine that returns; the last one after
// the connection ended closes stopped.
func (c *Connection) goroutineDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.goroutines--
	if c.goroutines == 0 && c.ctx.Err() != nil && !c.stoppedClosed {
		c.stoppedClosed = true
		close(c.stopped)
	}
}

// shutdown ends the connection once with cause.
func (c *Connection) shutdown(cause error) {
	c.shutdownOnce.Do(func() {
		c.cancel(cause)

		c.qmu.Lock()
		c.queueClosed = true
		if c.completedSeq < c.enqueuedSeq {
			c.drainTimer = time.AfterFunc(notificationDrainTimeout, func() { c.notifyCancel(cause) })
		}
		c.qcond.Broadcast()
		c.roomCond.Broadcast()
		c.qmu.Unlock()

		c.mu.Lock()
		c.cancelQueue = nil
		// Requests still waiting for a slot are dropped: their replies
		// could no longer be delivered.
		for _, job := range c.backlog {
			c.forgetInflightLocked(job)
		}
		c.backlog, c.backlogBytes = nil, 0
		c.requestRoom.Broadcast()
		c.mu.Unlock()

		c.log().Info("connection closed", "cause", cause.Error())
	})
}

// readLoop reads and dispatches lines until the stream ends.
func (c *Connection) readLoop() {
	defer c.goroutineDone()
	lr := newLineReader(c.r, c.opts.maxLineBytes)
	var env envelope
	for {
		line, err := lr.next()
		if len(line) > 0 && !isBlankLine(line) && c.ctx.Err() == nil {
			ok := c.dispatchLine(line, &env)
			// Let go of the line's members before reading the next line: a
			// large frame must not stay reachable while the next is read.
			env = envelope{}
			if !ok {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = ErrPeerConnectionClosed
			}
			c.shutdown(err)
			return
		}
		if c.ctx.Err() != nil {
			return
		}
	}
}

// dispatchLine handles one non-blank line; false stops the read loop.
func (c *Connection) dispatchLine(line []byte, env *envelope) bool {
	if err := decodeEnvelope(line, env); err != nil {
		c.rejectMalformed(line, err)
		return true
	}
	switch {
	case env.id == nil && env.method == methodCancelRequest:
		c.handleCancelRequest(env.params)
	case env.id != nil && env.method == "":
		c.handleResponse(env, line)
	case env.method != "" && env.id != nil:
		if !validIDKind(env.id) {
			c.rejectInvalidID(line)
			return true
		}
		return c.startRequest(env.id, env.method, env.params)
	case env.method != "":
		return c.enqueueNotification(env.method, env.params)
	case env.result == nil && env.err == nil:
		c.rejectEmpty(line)
	default:
		c.logMalformed("received message with neither id nor method", line, nil)
	}
	return true
}

// loggedLine renders a line for a log record, truncated.
func loggedLine(line []byte) string {
	if len(line) <= maxLoggedLineBytes {
		return string(line)
	}
	return fmt.Sprintf("%s…(%d bytes)", line[:maxLoggedLineBytes], len(line))
}

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
// While a call made from (or while) a handler waits for its response, that
// response may sit in the pipe behind notifications, and the handler cannot
// return before it arrives; the reader then keeps reading and
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
	c.enqueuedSeq++
	c.queue.push(queuedNotification{seq: c.enqueuedSeq, method: method, params: params}, maxCount)
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
// call made from a notification handler awaits its response. The effective
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

// readAheadCallStarted records a call that may be awaited by a handler and
// wakes the reader if it waits for room in the notification queue or for a
// request slot (the call's response may be behind them in the pipe).
func (c *Connection) readAheadCallStarted() {
	c.readAheadCalls.Add(1)
	c.qmu.Lock()
	c.roomCond.Signal()
	c.qmu.Unlock()
	c.mu.Lock()
	c.requestRoom.Signal()
	c.mu.Unlock()
}

// notificationLoop runs the notification handlers, one at a time, in order.
func (c *Connection) notificationLoop() {
	defer c.goroutineDone()
	var done uint64
	for {
		c.qmu.Lock()
		if done != 0 {
			c.completeNotificationLocked(done)
			c.runningBytes = 0
			c.runningSeq.Store(0)
			c.wakeReaderLocked()
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
		if c.notifyGoroutine.Load() == 0 {
			// Asked once, before the first handler runs (it costs an
			// allocation, which an idle connection need not pay).
			c.notifyGoroutine.Store(goroutineID())
		}
		c.runningSeq.Store(item.seq)
		c.wakeReaderLocked()
		c.qmu.Unlock()

		c.handleNotification(item.method, item.params)
		done = item.seq
	}
}

// completeNotificationLocked records that notification seq was handled and
// releases the responses that were waiting for it. c.qmu is held.
func (c *Connection) completeNotificationLocked(seq uint64) {
	c.completedSeq = seq
	n := 0
	for n < len(c.deferred) && c.deferred[n].watermark <= seq {
		close(c.deferred[n].done)
		c.deferred[n] = nil
		n++
	}
	if n > 0 {
		c.deferred = c.deferred[n:]
		if len(c.deferred) == 0 {
			c.deferred = nil
		}
	}
}

// handleNotification runs the handler for one notification.
func (c *Connection) handleNotification(method string, params json.RawMessage) {
	if c.handler == nil {
		return
	}
	_, rerr := c.invoke(c.notifyCtx, method, params)
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
	if c.opts.orderedRequests {
		// Registered here, on the reader goroutine, so the watermark is
		// exactly the notifications that preceded the request on the wire.
		c.qmu.Lock()
		if c.completedSeq < c.enqueuedSeq {
			job.barrier = &pendingCall{watermark: c.enqueuedSeq, done: make(chan struct{})}
			c.deferred = append(c.deferred, job.barrier)
		}
		c.qmu.Unlock()
	}
	c.mu.Lock()
	// Registered at once, so a $/cancel_request read later finds it even
	// while it waits for a slot.
	c.inflight[idKey] = entry
	if c.runningRequests < c.opts.maxInflightRequests && len(c.backlog) == 0 {
		c.runningRequests++
		c.mu.Unlock()
		c.dispatchRequest(job)
		return true
	}
	c.backlog = append(c.backlog, job)
	c.backlogBytes += len(params)
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
// While a call made from (or while) a handler awaits its response, that
// response may sit in the pipe behind further requests, and the handlers
// holding the slots may be waiting for it; the reader then reads on,
// queueing requests, up to the read-ahead cap (as many requests as the
// notification read-ahead cap, and as many params bytes). At the cap it
// returns an error wrapping ErrRequestBacklogOverflow, with which the
// connection ends rather than hang. c.mu is held.
func (c *Connection) waitForRequestSlotLocked() error {
	for len(c.backlog) > 0 && c.ctx.Err() == nil {
		if c.readAheadCalls.Load() == 0 {
			c.requestRoom.Wait()
			continue
		}
		maxCount, maxBytes := c.readAheadCap()
		if len(c.backlog) >= maxCount || c.backlogBytes >= maxBytes {
			return fmt.Errorf("%w: %d requests (%d params bytes) waiting for a slot while a handler awaited a response (read-ahead cap %d requests, %d bytes)",
				ErrRequestBacklogOverflow, len(c.backlog), c.backlogBytes, maxCount, maxBytes)
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
// first request of the backlog, waking the reader once the backlog is empty.
func (c *Connection) releaseRequestSlot(job requestJob) {
	c.mu.Lock()
	if c.inflight[job.idKey] == job.entry {
		delete(c.inflight, job.idKey)
	}
	if len(c.backlog) == 0 || c.ctx.Err() != nil {
		c.runningRequests--
		c.mu.Unlock()
		return
	}
	next := c.backlog[0]
	c.backlog[0] = requestJob{}
	c.backlog = c.backlog[1:]
	c.backlogBytes -= len(next.params)
	if len(c.backlog) == 0 {
		c.backlog = nil
		c.requestRoom.Signal()
	}
	c.mu.Unlock()
	c.dispatchRequest(next)
}

// forgetInflightLocked drops a request that will not run. c.mu is held.
func (c *Connection) forgetInflightLocked(job requestJob) {
	if c.inflight[job.idKey] == job.entry {
		delete(c.inflight, job.idKey)
	}
	job.entry.cancel(nil)
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
		result, rerr = c.invoke(context.WithValue(job.ctx, inboundRequestKey{}, true), job.method, job.params)
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
	entry := c.inflight[idKey]
	c.mu.Unlock()
	if entry != nil {
		entry.cancel(context.Canceled)
	}
}

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
	pc := c.pending[id]
	if pc != nil {
		c.removePendingLocked(pc)
		pc.received = true
	}
	c.mu.Unlock()
	if pc == nil {
		return // unknown or late: dropped, as upstream
	}
	pc.result = env.result
	pc.err = env.err
	if pc.noBarrier {
		close(pc.done)
		return
	}
	c.qmu.Lock()
	if c.completedSeq >= c.enqueuedSeq {
		c.qmu.Unlock()
		close(pc.done)
		return
	}
	pc.watermark = c.enqueuedSeq
	c.deferred = append(c.deferred, pc)
	c.qmu.Unlock()
}

// appendValue appends v as json.Marshal would encode it.
func (e *encodeBuffer) appendValue(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1) // Encode's newline
	return nil
}

// writeJob is one line handed to the writer, with the channel (buffered,
// capacity 1) its result goes to.
type writeJob struct {
	line []byte
	done chan error
}

// write sends one complete line. It returns nil once the line is written,
// the write's error, ctx's error when ctx ends first, or ErrConnectionClosed
// after Close, whether the sender was still waiting for an earlier write or
// its own write was blocked on the peer. busy reports that the writer still
// holds line: the caller must then not reuse its memory.
func (c *Connection) write(ctx context.Context, line []byte) (busy bool, err error) {
	select {
	case c.writeSem <- struct{}{}:
	default:
		select {
		case c.writeSem <- struct{}{}:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-c.closed:
			return false, ErrConnectionClosed
		}
	}
	// writeSem is now ours; whoever writes the line releases it.
	if err := ctx.Err(); err != nil {
		<-c.writeSem
		return false, err
	}
	select {
	case <-c.closed:
		<-c.writeSem
		return false, ErrConnectionClosed
	default:
	}
	job := writeJob{line: line, done: c.free.getWriteResult()}
	select {
	case c.writeLine <- job:
	case <-c.ctx.Done():
		// The writer goroutine is gone with the connection; later writes
		// (as upstream, a notification is still attempted) each get one.
		go c.writeOne(job)
	}
	var gaveUp error
	select {
	case err := <-job.done:
		c.free.putWriteResult(job.done)
		return false, err
	case <-ctx.Done():
		gaveUp = ctx.Err()
	case <-c.closed:
		gaveUp = ErrConnectionClosed
	}
	select {
	case err := <-job.done: // finished meanwhile: report the write
		c.free.putWriteResult(job.done)
		return false, err
	default:
		return true, gaveUp
	}
}

// writeLoop writes the lines senders hand over until the connection ends.
func (c *Connection) writeLoop() {
	defer c.goroutineDone()
	for {
		select {
		case job := <-c.writeLine:
			c.writeOne(job)
		case <-c.ctx.Done():
			return
		}
	}
}

// writeOne writes one line for the sender holding writeSem, reports the
// result and releases writeSem.
func (c *Connection) writeOne(job writeJob) {
	_, err := c.w.Write(job.line)
	job.done <- err
	<-c.writeSem
}

// writeResponse sends the reply to an inbound request. A result that cannot
// be marshalled becomes -32603 (as upstream); so does an error whose data
// cannot be marshalled (upstream sends nothing, leaving the peer waiting).
func (c *Connection) writeResponse(rawID json.RawMessage, result any, rerr *RequestError) {
	e := c.free.getEncodeBuffer()
	for attempt := 0; ; attempt++ {
		e.buf.Reset()
		e.buf.WriteString(`{"jsonrpc":"2.0","id":`)
		e.buf.Write(appendRawID(e.buf.AvailableBuffer(), rawID))
		var err error
		if rerr != nil {
			e.buf.WriteString(`,"error":`)
			err = e.appendValue(rerr)
		} else {
			e.buf.WriteString(`,"result":`)
			err = c.appendResult(e, result)
		}
		if err != nil && attempt == 0 {
			rerr = NewInternalError(errorData(err.Error()))
			continue
		}
		if err != nil {
			c.free.putEncodeBuffer(e)
			c.log().Error("failed to encode response", "err", err)
			return
		}
		break
	}
	e.buf.WriteString("}\n")
	c.sendLine(context.Background(), e, "failed to write response")
}

// sendLine writes the line laid out in e and recycles e unless the writer
// still holds it; a failure is logged at Debug with msg.
func (c *Connection) sendLine(ctx context.Context, e *encodeBuffer, msg string) error {
	busy, err := c.write(ctx, e.buf.Bytes())
	if !busy {
		c.free.putEncodeBuffer(e)
	}
	if err != nil && msg != "" {
		c.log().Debug(msg, "err", err)
	}
	return err
}

// appendResult marshals a handler result, recovering a panicking
// MarshalJSON.
func (c *Connection) appendResult(e *encodeBuffer, result any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log().Error("panic while encoding result", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic while encoding result: %v", p)
		}
	}()
	return e.appendValue(result)
}

// encodeMessage lays out a request (id > 0) or notification envelope.
func encodeMessage(e *encodeBuffer, id uint64, method string, params any) error {
	e.buf.WriteString(`{"jsonrpc":"2.0"`)
	if id != 0 {
		e.buf.WriteString(`,"id":`)
		e.buf.Write(appendUintID(e.buf.AvailableBuffer(), id))
	}
	if method != "" {
		e.buf.WriteString(`,"method":`)
		e.buf.Write(appendJSONString(e.buf.AvailableBuffer(), method))
	}
	if params != nil {
		e.buf.WriteString(`,"params":`)
		if err := e.appendValue(params); err != nil {
			return err
		}
	}
	e.buf.WriteString("}\n")
	return nil
}

// SendRequest sends a request and decodes its result into T. It returns
// after the response arrived and every notification the peer sent before it
// was handled. Errors are *RequestError values: the peer's error, -32602
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
	wrote := wroteRequestHook(ctx)
	id := c.nextID.Add(1)
	e := c.free.getEncodeBuffer()
	if err := encodeMessage(e, id, method, params); err != nil {
		c.free.putEncodeBuffer(e)
		wrote(err)
		return nil, NewInvalidParams(errorData(err.Error()))
	}
	pc := &pendingCall{id: id, done: make(chan struct{})}
	handlerRunning := c.runningSeq.Load() != 0
	if owner, _ := ctx.Value(notificationCtxKey{}).(*Connection); owner == c {
		pc.noBarrier = true
	} else if handlerRunning {
		// A handler calling with an unrelated context (or none of ours)
		// is recognised by its goroutine.
		pc.noBarrier = goroutineID() == c.notifyGoroutine.Load()
	}
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		c.free.putEncodeBuffer(e)
		err := c.peerDisconnected(textDisconnectedBeforeResponse)
		wrote(err)
		return nil, err
	}
	pc.readAhead = pc.noBarrier || handlerRunning || c.runningRequests > 0
	c.pending[id] = pc
	c.mu.Unlock()
	if pc.readAhead {
		// Registered before the write: the reader must read past the
		// bounds until this answer is in, as a handler may wait for it.
		c.readAheadCallStarted()
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
	c.removePendingLocked(pc)
	c.mu.Unlock()
}

// removePendingLocked removes pc from the pending calls. c.mu is held.
func (c *Connection) removePendingLocked(pc *pendingCall) {
	if c.pending[pc.id] != pc {
		return
	}
	delete(c.pending, pc.id)
	if pc.readAhead {
		c.readAheadCalls.Add(-1)
	}
}

// abandon ends a wait cut short by the connection ending or the caller's
// ctx ending. A delivered response still wins; a disconnect wins over the
// caller's ctx.
func (c *Connection) abandon(pc *pendingCall, ctx context.Context) (json.RawMessage, error) {
	c.mu.Lock()
	received := pc.received
	if !received {
		c.removePendingLocked(pc)
	}
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
	if !received {
		c.queueCancelRequest(pc.id)
	}
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
