package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
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
// seen before Prompt returns. The caller's code after the call runs
// alongside the handlers of the notifications that followed the response;
// what must come before them goes in the call's RequestTrace.ResponseInOrder
// hook, which runs at the response's place in wire order.
//
// Memory bound: with the defaults, what the connection holds of its peer's
// input is at most 1024 running request handlers (their params) plus one
// request waiting for a slot, 1024 queued notifications or 16 MiB of their
// params (WithMaxQueuedNotifications, WithMaxQueuedNotificationBytes; one
// notification of any size is always accepted), and the line being read
// (at most 64 MiB). Only while a handler's call (see below) awaits
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
// Calls from handlers, the one rule: a call made with the ctx a handler
// received (or a context derived from it, from any goroutine) while that
// handler runs is the handler's call; every other call is an ordinary one.
// Each handler call gets its own ctx, and it stops marking calls when the
// handler returns (it stays usable). An ordinary call returns only after
// every notification received before its response has been handled (the
// response barrier); a handler's call returns as soon as its response
// arrives, since the handler may be what those notifications wait for
// (the one running, or a lock it holds). While a handler's call awaits its
// response the reader keeps reading past the queue and slot bounds, up to
// the read-ahead cap, and under WithOrderedRequests a request that arrives
// while a notification handler awaits its call (or waits when one starts)
// runs without waiting for the earlier notifications, as it may be the
// peer's step towards that response. So a handler may call the peer, wait
// for the answer, hold locks other handlers need, and leave goroutines that
// call later with its ctx (those calls, made after it returned, are
// ordinary and wait for the barrier). What a caller must not do: a handler
// must not wait for a call made with a context that is not (derived from)
// its own, such as context.Background(): that call is ordinary, so its
// response waits for the running notification handler, and the SDK cannot
// tell who made it. Such a call ends only when its context ends, with an
// error (errors.Is finds the context's cause) saying that a notification
// handler still runs and that a handler must call with its ctx; without a
// deadline it never returns.
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

	// mu guards state, the connection's one state (changed only by
	// stepLocked, see connState), and the cancel queue, goroutine
	// accounting and drain timer.
	mu    sync.Mutex
	state connState
	// qcond wakes the notification loop; roomCond the reader waiting for
	// room in the queue, requestRoom the reader waiting for the request
	// backlog to empty (flow control, see enqueueNotification and
	// waitForRequestSlotLocked). readerWaiting is set while the reader
	// waits on roomCond. All wait on mu.
	qcond               sync.Cond
	roomCond            sync.Cond
	requestRoom         sync.Cond
	readerWaiting       bool
	cancelQueue         []uint64
	cancelSenderRunning bool
	goroutines          int
	stoppedClosed       bool
	stopped             chan struct{}
	drainTimer          *time.Timer

	// readAheadCalls mirrors state.handlerCalls: the calls made by running
	// handlers (with their ctx) whose response has not arrived. While it is
	// non-zero the reader reads past the notification and request bounds,
	// up to the read-ahead caps, since a handler may be waiting for that
	// response (see enqueueNotification and waitForRequestSlotLocked).
	readAheadCalls atomic.Int64

	shutdownOnce sync.Once
	closeOnce    sync.Once
	closeErr     error
}

// pendingCall is an outbound request waiting for its response, or (with
// request set) an ordered inbound request waiting for notifications.
type pendingCall struct {
	id uint64
	// scope is the running handler's scope the call was made with, while
	// it is counted in connState.handlerCalls (see stepLocked); request
	// marks an ordered request's barrier. Both are guarded by
	// Connection.mu.
	scope   *handlerScope
	request bool
	// received is set (under Connection.mu) when the response has arrived.
	received bool
	// watermark is the last notification the response must wait for.
	watermark uint64
	// inOrder is the call's RequestTrace.ResponseInOrder hook, or nil;
	// with one, the response is delivered by runInOrder.
	inOrder func(error)
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

// NewConnection starts a connection that writes to peerInput (what the peer
// reads) and reads from peerOutput (what the peer writes), handing inbound
// messages to handler. A nil handler answers every request -32601.
func NewConnection(handler MethodHandler, peerInput io.Writer, peerOutput io.Reader, opts ...ConnectionOption) *Connection {
	c := &Connection{
		w:       peerInput,
		r:       peerOutput,
		handler: handler,
		opts:    applyConnectionOptions(opts),
		state: connState{
			pending:  make(map[uint64]*pendingCall),
			inflight: make(map[string]*inflightRequest),
		},
		stopped:     make(chan struct{}),
		writeSem:    make(chan struct{}, 1),
		writeLine:   make(chan writeJob),
		requestJobs: make(chan requestJob),
		closed:      make(chan struct{}),
	}
	c.qcond.L = &c.mu
	c.roomCond.L = &c.mu
	c.requestRoom.L = &c.mu
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	inbound, inboundCancel := context.WithCancelCause(context.Background())
	c.notifyCtx = inbound
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

		c.mu.Lock()
		if c.stepLocked(event{kind: evClosed}).drain {
			c.drainTimer = time.AfterFunc(notificationDrainTimeout, func() { c.notifyCancel(cause) })
		}
		c.cancelQueue = nil
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
