package main

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Log throttling: an agent that sends the same fault without end (junk
// lines, say) must not flood standard error. Each message (by level and
// text) is printed logBurst times; after that its repeats are counted and
// printed at most once per logInterval as one record with a "suppressed"
// count, and what is still counted at the end is printed by flush.
const (
	logBurst    = 5
	logInterval = time.Second
	// logKeys bounds the distinct messages tracked; beyond it, new
	// messages share one bucket.
	logKeys = 256
)

// throttle is a slog.Handler that passes records on to next within the
// limits above. Handlers derived with WithAttrs and WithGroup share the
// counts.
type throttle struct {
	next  slog.Handler
	state *throttleState
}

type throttleState struct {
	mu     sync.Mutex
	now    func() time.Time
	counts map[string]*logCount
}

// logCount is one message's tally.
type logCount struct {
	seen       int
	suppressed int
	last       slog.Record // the latest suppressed record, for the summary
	handler    slog.Handler
	reported   time.Time
}

func newThrottle(next slog.Handler, now func() time.Time) *throttle {
	return &throttle{next: next, state: &throttleState{now: now, counts: map[string]*logCount{}}}
}

// Enabled reports what next reports.
func (h *throttle) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// WithAttrs derives a handler sharing the counts.
func (h *throttle) WithAttrs(a []slog.Attr) slog.Handler {
	return &throttle{next: h.next.WithAttrs(a), state: h.state}
}

// WithGroup derives a handler sharing the counts.
func (h *throttle) WithGroup(name string) slog.Handler {
	return &throttle{next: h.next.WithGroup(name), state: h.state}
}

// Handle passes r on, or counts it as a repeat.
func (h *throttle) Handle(ctx context.Context, r slog.Record) error {
	s := h.state
	s.mu.Lock()
	key := r.Level.String() + "\x00" + r.Message
	c, ok := s.counts[key]
	if !ok {
		if len(s.counts) >= logKeys {
			key = "\x00other"
			c = s.counts[key]
		}
		if c == nil {
			c = &logCount{}
			s.counts[key] = c
		}
	}
	c.seen++
	if c.seen <= logBurst {
		s.mu.Unlock()
		return h.next.Handle(ctx, r)
	}
	c.suppressed++
	c.last, c.handler = r.Clone(), h.next
	now := s.now()
	if now.Sub(c.reported) < logInterval {
		s.mu.Unlock()
		return nil
	}
	summary, next := c.summary(now)
	s.mu.Unlock()
	return next.Handle(ctx, summary)
}

// summary is the record that reports c's suppressed repeats, and resets
// the count.
func (c *logCount) summary(now time.Time) (slog.Record, slog.Handler) {
	r := c.last.Clone()
	r.AddAttrs(slog.Int("suppressed", c.suppressed))
	c.suppressed = 0
	c.reported = now
	return r, c.handler
}

// flush prints the repeats still counted.
func (h *throttle) flush() {
	s := h.state
	s.mu.Lock()
	var pending []func()
	for _, c := range s.counts {
		if c.suppressed > 0 {
			r, next := c.summary(s.now())
			pending = append(pending, func() { _ = next.Handle(context.Background(), r) })
		}
	}
	s.mu.Unlock()
	for _, p := range pending {
		p()
	}
}
