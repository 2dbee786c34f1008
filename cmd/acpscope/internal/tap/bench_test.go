package tap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// benchFrame is a typical agent frame: a subagent's tool_call update.
func benchFrame(i int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_%d","status":"in_progress","rawInput":{"description":"Investigate the flaky test","prompt":"Find the root cause of the flaky retry test and report it","subagent_type":"general-purpose"},"_meta":{"claudeCode":{"toolName":"Agent"}}}}}`+"\n", i%64)
}

// path is one direction of a connection over OS pipes, as the editor and
// the agent see it: direct (agent's pipe read by the editor) or through a
// pump whose observer follows every line.
type path struct {
	w       *os.File // where the sender writes
	r       *os.File // where the receiver reads
	closeFn func()
	pump    *Pump
}

func newPath(b *testing.B, tapped bool) *path {
	return newPathObserved(b, tapped, true)
}

// newPathObserved is newPath whose tap's observer can be left out, to
// tell the pump's cost from the observer's.
func newPathObserved(b *testing.B, tapped, observed bool) *path {
	b.Helper()
	r1, w1, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	if !tapped {
		return &path{w: w1, r: r1, closeFn: func() { w1.Close(); r1.Close() }}
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	q := NewQueue(0, 0)
	obs := newTestObserver(b, io.Discard)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for l, ok := q.Next(); ok; l, ok = q.Next() {
			obs.Observe(l.From, l.Bytes)
			q.Done(l)
		}
	}()
	obs.Observe(capture.FromClient, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
	obs.Observe(capture.FromAgent, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp"}}}`))
	p := &Pump{From: capture.FromAgent, Queue: q}
	if !observed {
		p.Queue = nil
	}
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		_ = p.Copy(w2, r1)
		w2.Close()
	}()
	return &path{w: w1, r: r2, pump: p, closeFn: func() {
		w1.Close()
		<-pumped
		r1.Close()
		r2.Close()
		q.Close()
		<-drained
	}}
}

// BenchmarkThroughput is bytes/s of a stream of agent frames over a pipe,
// without and with the tap (a pump and its observer) in the path.
func BenchmarkThroughput(b *testing.B) {
	var stream bytes.Buffer
	for i := range 4096 {
		stream.Write(benchFrame(i))
	}
	for _, variant := range []struct {
		name             string
		tapped, observed bool
	}{{"direct", false, false}, {"tap", true, true}, {"tap-unobserved", true, false}} {
		b.Run(variant.name, func(b *testing.B) {
			p := newPathObserved(b, variant.tapped, variant.observed)
			received := make(chan int64)
			go func() {
				n, _ := io.Copy(io.Discard, p.r)
				received <- n
			}()
			b.SetBytes(int64(stream.Len()))
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.w.Write(stream.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
			p.w.Close()
			n := <-received
			b.StopTimer()
			p.closeFn()
			if want := int64(stream.Len()) * int64(b.N); n != want {
				b.Fatalf("received %d bytes, sent %d", n, want)
			}
			if p.pump != nil && p.pump.Queue != nil {
				b.ReportMetric(float64(p.pump.Queue.Dropped.Load())/float64(p.pump.Lines.Load()+1), "unobserved/line")
			}
		})
	}
}

// BenchmarkFrameLatency is the time from a frame's write to its complete
// read on the other side (one frame in flight at a time), without and
// with the tap: ns/op is the per-frame latency.
func BenchmarkFrameLatency(b *testing.B) {
	frame := benchFrame(1)
	for _, tapped := range []bool{false, true} {
		b.Run(map[bool]string{false: "direct", true: "tap"}[tapped], func(b *testing.B) {
			p := newPath(b, tapped)
			buf := make([]byte, len(frame))
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if _, err := p.w.Write(frame); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(p.r, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			p.closeFn()
		})
	}
}
