package traces

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// queue is the span processor: a bounded queue that never blocks the
// span's end (a full queue drops the span, counted), and one goroutine
// that sends batches (OTEL_BSP_*). A batch the exporter refuses or that
// times out is dropped, counted. Shutdown sends what is queued until its
// context ends, then drops the rest, counted, and returns.
type queue struct {
	exp sdktrace.SpanExporter
	set batchSettings
	in  chan sdktrace.ReadOnlySpan

	flush chan chan struct{}
	stop  chan struct{}
	done  chan struct{}
	// abort ends an export in flight once the shutdown's time is up.
	abort     context.Context
	abortNow  context.CancelFunc
	closeOnce sync.Once

	queued, exported, dropped atomic.Int64
}

func newQueue(exp sdktrace.SpanExporter, set batchSettings) *queue {
	q := &queue{exp: exp, set: set, in: make(chan sdktrace.ReadOnlySpan, set.queue),
		flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	q.abort, q.abortNow = context.WithCancel(context.Background())
	go q.loop()
	return q
}

// OnStart does nothing: spans are queued when they end.
func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s, or drops it when the queue is full or shut down.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case <-q.stop:
		q.dropped.Add(1)
		return
	default:
	}
	select {
	case q.in <- s:
		q.queued.Add(1)
	default:
		q.dropped.Add(1)
	}
}

func (q *queue) loop() {
	defer close(q.done)
	buf := make([]sdktrace.ReadOnlySpan, 0, q.set.batch)
	timer := time.NewTimer(q.set.delay)
	defer timer.Stop()
	send := func() {
		for len(buf) > 0 {
			n := min(len(buf), q.set.batch)
			q.export(buf[:n])
			clear(buf[:n])
			buf = append(buf[:0], buf[n:]...)
		}
	}
	for {
		select {
		case s := <-q.in:
			buf = append(buf, s)
			if len(buf) >= q.set.batch {
				send()
			}
		case <-timer.C:
			send()
			timer.Reset(q.set.delay)
		case ack := <-q.flush:
			buf = q.drain(buf)
			send()
			close(ack)
		case <-q.stop:
			buf = q.drain(buf)
			send()
			return
		}
	}
}

// drain moves what is queued into buf.
func (q *queue) drain(buf []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	for {
		select {
		case s := <-q.in:
			buf = append(buf, s)
		default:
			return buf
		}
	}
}

// export sends one batch; a batch that fails (or is not sent because the
// shutdown's time is up) is counted dropped.
func (q *queue) export(batch []sdktrace.ReadOnlySpan) {
	if q.abort.Err() != nil {
		q.dropped.Add(int64(len(batch)))
		return
	}
	ctx, cancel := context.WithTimeout(q.abort, q.set.timeout)
	defer cancel()
	if err := q.exp.ExportSpans(ctx, batch); err != nil {
		q.dropped.Add(int64(len(batch)))
		return
	}
	q.exported.Add(int64(len(batch)))
}

// ForceFlush sends what is queued, waiting at most until ctx ends.
func (q *queue) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case q.flush <- ack:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown sends what is queued until ctx ends; then the export in flight
// is abandoned and what is left is counted dropped.
func (q *queue) Shutdown(ctx context.Context) error {
	q.closeOnce.Do(func() { close(q.stop) })
	select {
	case <-q.done:
	case <-ctx.Done():
		q.abortNow()
		<-q.done // the export in flight ends with abort
	}
	q.abortNow()
	// Spans that arrived after the loop ended.
	for {
		select {
		case <-q.in:
			q.dropped.Add(1)
			continue
		default:
		}
		break
	}
	sctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = q.exp.Shutdown(sctx)
	return nil
}
