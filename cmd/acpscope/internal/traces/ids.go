package traces

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// The derivations of ids: a domain word, then the parts, each
// length-prefixed, so that no two tuples hash the same input.
func digest(domain string, parts ...string) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range append([]string{domain}, parts...) {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// TraceIDOf is the trace of an ACP session (its root session: a child
// session's spans are in its parent's trace).
func TraceIDOf(session string) trace.TraceID {
	d := digest("acpscope/trace", session)
	var id trace.TraceID
	copy(id[:], d[:16])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

func spanID(domain string, parts ...string) trace.SpanID {
	d := digest(domain, parts...)
	var id trace.SpanID
	copy(id[:], d[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// TurnSpanID is the span of the session's n-th turn (from 1).
func TurnSpanID(session string, n int) trace.SpanID { return turnSpan("", session, n) }

// ToolSpanID is the execute_tool span of a tool call of a session.
func ToolSpanID(session, toolCallID string) trace.SpanID { return toolSpan("", session, toolCallID) }

// AgentSpanID is the invoke_agent span of the subagent a card of a
// session stands for.
func AgentSpanID(session, toolCallID string) trace.SpanID { return agentSpan("", session, toolCallID) }

// The derivations with a salt: "" for the spans of a turn that is a root
// (run, replay, export, a tap without the editor's traceparent), the
// editor's span id for a turn parented on it, so that a tap under an
// acpscope run that exports too never gives its spans the run's ids.
func turnSpan(salt, session string, n int) trace.SpanID {
	return spanID("acpscope/turn", salt, session, strconv.Itoa(n))
}

func toolSpan(salt, session, toolCallID string) trace.SpanID {
	return spanID("acpscope/tool", salt, session, toolCallID)
}

func agentSpan(salt, session, toolCallID string) trace.SpanID {
	return spanID("acpscope/agent", salt, session, toolCallID)
}

// ids is what the id generator hands out for the next span started with
// a context carrying it.
type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

type idsKey struct{}

// withIDs returns ctx carrying the ids of the span about to be started.
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, ids{t, s})
}

// idGenerator gives each span the ids its context carries (withIDs):
// every span acpscope starts has derived ids. A span without them (none is
// started so) gets ids from the hash of nothing in particular.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	v, _ := ctx.Value(idsKey{}).(ids)
	if !v.trace.IsValid() {
		v.trace = TraceIDOf("")
	}
	if !v.span.IsValid() {
		v.span = spanID("acpscope/none")
	}
	return v.trace, v.span
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	v, _ := ctx.Value(idsKey{}).(ids)
	if !v.span.IsValid() {
		return spanID("acpscope/none")
	}
	return v.span
}
