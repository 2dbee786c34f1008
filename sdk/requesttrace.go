package acp

import "context"

// RequestTrace holds hooks an outbound request calls on its way, as
// net/http/httptrace's ClientTrace does for an HTTP request. Attach one to
// a request's context with WithRequestTrace. A hook runs on the calling
// goroutine and must not block.
type RequestTrace struct {
	// WroteRequest is called exactly once per request: with nil once the
	// request's line was written to the peer, or with the reason it was
	// not (params that do not encode, a connection that has ended, a ctx
	// that ended first, a failed write). A caller that queues requests
	// (a session/prompt sent while another is open) sends the next one
	// after it, so the peer reads them in order.
	WroteRequest func(err error)

	// ResponseInOrder is called at most once per request, when its
	// response takes its place among the peer's notifications: after
	// every notification the response waits for has been handled (the
	// response barrier, see Connection; a handler's call waits for none)
	// and before any notification the peer sent after the response is
	// handled. err is nil for a result, else the peer's *RequestError.
	//
	// The call returns only after the hook, but the caller's code after
	// the call runs alongside the handlers of the notifications that
	// followed the response: what must come before them (the end of a
	// session/load that later updates must not be taken as history,
	// say) belongs here. The hook runs on one of the connection's
	// goroutines (the reader, or the one running notification handlers),
	// which waits for it: it must be quick, and must not wait for a call
	// on the same connection. A panic in it is recovered and logged.
	//
	// It is not called when no response arrives (ctx ended before it,
	// the connection ended, the write failed). A response that arrived
	// while the call's ctx ended as it waited for earlier notifications
	// still takes its place, and the hook is called then, after the call
	// has returned its error.
	ResponseInOrder func(err error)
}

// requestTraceKey is the context key of a *RequestTrace.
type requestTraceKey struct{}

// WithRequestTrace returns a context, derived from ctx, whose requests
// (SendRequest, SendRequestNoResult, and every request method of
// ClientSideConnection and AgentSideConnection) call trace's hooks. A nil
// trace gives ctx back.
func WithRequestTrace(ctx context.Context, trace *RequestTrace) context.Context {
	if trace == nil {
		return ctx
	}
	return context.WithValue(ctx, requestTraceKey{}, trace)
}

// requestTraceOf is ctx's trace, or nil.
func requestTraceOf(ctx context.Context) *RequestTrace {
	t, _ := ctx.Value(requestTraceKey{}).(*RequestTrace)
	return t
}

// wroteRequest is t's WroteRequest hook, or a no-op (t may be nil).
func (t *RequestTrace) wroteRequest() func(error) {
	if t != nil && t.WroteRequest != nil {
		return t.WroteRequest
	}
	return func(error) {}
}

// responseInOrder is t's ResponseInOrder hook, or nil (t may be nil).
func (t *RequestTrace) responseInOrder() func(error) {
	if t != nil {
		return t.ResponseInOrder
	}
	return nil
}
