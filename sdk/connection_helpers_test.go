package acp

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// hangGuard is how long a test waits for something that must happen before
// declaring a hang. It is a guard, not a timing assertion.
const hangGuard = 20 * time.Second

// logRecorder is a slog.Handler that keeps records for assertions.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteString(" ")
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" ")
		b.WriteString(a.Key)
		b.WriteString("=")
		b.WriteString(a.Value.String())
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, b.String())
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// contains reports whether some record contains all parts.
func (l *logRecorder) contains(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, r := range l.records {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		return true
	}
	return false
}

// rawPeer drives a Connection over io.Pipe with raw lines.
type rawPeer struct {
	t    *testing.T
	conn *Connection
	logs *logRecorder
	// in is what the connection reads; out what it writes.
	in    *io.PipeWriter
	out   *bufio.Reader
	outR  *io.PipeReader
	lines chan string
}

func newRawPeer(t *testing.T, handler MethodHandler, opts ...ConnectionOption) *rawPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &rawPeer{t: t, in: inW, outR: outR, out: bufio.NewReader(outR), logs: &logRecorder{}, lines: make(chan string, 1024)}
	p.conn = NewConnection(handler, outW, inR, opts...)
	p.conn.SetLogger(slog.New(p.logs))
	go func() {
		defer close(p.lines)
		for {
			line, err := p.out.ReadString('\n')
			if err != nil {
				return
			}
			p.lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = p.conn.Close()
		_ = outR.Close()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := p.conn.Wait(ctx); err != nil && ctx.Err() != nil {
			t.Errorf("connection goroutines did not stop: %v", err)
		}
	})
	return p
}

// send writes one line (a newline is appended).
func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// recv returns the next line the connection wrote.
func (p *rawPeer) recv() string {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("connection output closed")
		}
		return line
	case <-time.After(hangGuard):
		p.t.Fatal("timed out waiting for a line from the connection")
	}
	return ""
}

// expectLine fails unless the next line equals want.
func (p *rawPeer) expectLine(want string) {
	p.t.Helper()
	if got := p.recv(); got != want {
		p.t.Fatalf("line mismatch\n got: %s\nwant: %s", got, want)
	}
}

// waitChan fails the test unless ch closes (or yields) before the guard.
func waitChan[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// pipePair connects two Connections with os-independent io.Pipes.
func pipePair(t *testing.T, a, b MethodHandler, opts ...ConnectionOption) (*Connection, *Connection) {
	t.Helper()
	aR, bW := io.Pipe()
	bR, aW := io.Pipe()
	ca := NewConnection(a, aW, aR, opts...)
	cb := NewConnection(b, bW, bR, opts...)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ca.SetLogger(quiet)
	cb.SetLogger(quiet)
	t.Cleanup(func() {
		_ = ca.Close()
		_ = cb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		_ = ca.Wait(ctx)
		_ = cb.Wait(ctx)
	})
	return ca, cb
}
