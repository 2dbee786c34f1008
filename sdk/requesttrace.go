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

// wroteRequestHook is the WroteRequest hook of ctx's trace, or a no-op.
func wroteRequestHook(ctx context.Context) func(error) {
	if t, _ := ctx.Value(requestTraceKey{}).(*RequestTrace); t != nil && t.WroteRequest != nil {
		return t.WroteRequest
	}
	return func(error) {}
}
