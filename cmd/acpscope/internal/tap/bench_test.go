package tap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

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
		follow(obs, q) // as the tap's observer does
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

// mixedStream is real-size agent traffic: a turn's message and thought
// chunks, tool calls, their updates with a few KiB of output, a subagent's
// Task call, plan updates, a permission request, from a few hundred bytes
// to a few KiB a frame.
func mixedStream() []byte {
	var b bytes.Buffer
	output := strings.Repeat(`ok  \tgithub.com/example/pkg\t0.412s\n`, 40) // ~1.6 KiB of tool output
	for i := range 512 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Looking at the retry loop in %d: the backoff is reset before "}}}}`+"\n", i)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"The test is flaky because the clock is shared between goroutines"}}}}`+"\n")
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_%d","title":"Run go test ./...","kind":"execute","status":"pending","rawInput":{"command":"go test ./...","description":"Run the tests"},"_meta":{"claudeCode":{"toolName":"Bash"}}}}}`+"\n", i)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_%d","status":"completed","content":[{"type":"content","content":{"type":"text","text":"%s"}}],"rawOutput":"%s"}}}`+"\n", i, output, output)
		if i%8 == 0 {
			b.Write(benchFrame(i))
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan","entries":[{"content":"Reproduce the flake","priority":"high","status":"completed"},{"content":"Fix the clock","priority":"high","status":"in_progress"}]}}}`+"\n")
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"toolu_%d","title":"Edit clock.go"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`+"\n", 1000+i, i)
		}
	}
	return b.Bytes()
}

// largeStream is frames of MiBs: a file read into a tool call's output.
func largeStream() []byte {
	var b bytes.Buffer
	text := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { /* ... */ }\\n", 40000) // ~2.6 MiB
	for i := range 4 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_%d","status":"completed","content":[{"type":"content","content":{"type":"text","text":"%s"}}]}}}`+"\n", i, text)
	}
	return b.Bytes()
}

// BenchmarkThroughput is bytes/s of a stream of agent frames over a pipe,
// without the tap (direct), through it with the observer following
// (tap), and through it with no observer (tap-unobserved): real-size mixed
// frames, frames of MiBs, and a burst of ~420-byte Task updates. The
// observer takes what it can; the rest of a saturating stream is counted
// (unobserved/line), the pass-through never waits for it.
func BenchmarkThroughput(b *testing.B) {
	var burst bytes.Buffer
	for i := range 4096 {
		burst.Write(benchFrame(i))
	}
	for _, stream := range []struct {
		name string
		data []byte
	}{{"mixed", mixedStream()}, {"large", largeStream()}, {"burst", burst.Bytes()}} {
		for _, variant := range []struct {
			name             string
			tapped, observed bool
		}{{"direct", false, false}, {"tap", true, true}, {"tap-unobserved", true, false}} {
			b.Run(stream.name+"/"+variant.name, func(b *testing.B) {
				benchStream(b, stream.data, variant.tapped, variant.observed)
			})
		}
	}
}

func benchStream(b *testing.B, data []byte, tapped, observed bool) {
	p := newPathObserved(b, tapped, observed)
	received := make(chan int64)
	go func() {
		n, _ := io.Copy(io.Discard, p.r)
		received <- n
	}()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.w.Write(data); err != nil {
			b.Fatal(err)
		}
	}
	p.w.Close()
	n := <-received
	b.StopTimer()
	p.closeFn()
	if want := int64(len(data)) * int64(b.N); n != want {
		b.Fatalf("received %d bytes, sent %d", n, want)
	}
	if p.pump != nil && p.pump.Queue != nil {
		b.ReportMetric(float64(p.pump.Queue.Dropped.Load())/float64(p.pump.Lines.Load()+1), "unobserved/line")
	}
}

// BenchmarkObserve is the observer's own cost: the lines of the mixed
// stream, one after another, with no pump (ns/op per stream, allocs).
func BenchmarkObserve(b *testing.B) {
	obs := newTestObserver(b, io.Discard)
	obs.Observe(capture.FromClient, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
	obs.Observe(capture.FromAgent, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp"}}}`))
	data := mixedStream()
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			obs.Observe(capture.FromAgent, l)
		}
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

// BenchmarkObserverPace is the tap's pace with the observer as a share of
// its pace without one, measured in pairs: each round sends a burst of
// streams back to back through a tap without an observer and through a
// tap with it (in turn first), and "pace" is the median of the rounds'
// ratios (1: the observer costs the pass-through nothing). The two taps
// stay open across the rounds, as a tap's connection does, and each burst
// starts once the observer has taken the last one, so that its work on one
// burst never lands in the other tap's time. The paired rounds cancel most
// of what a busy machine does to both; ns/op is one round.
func BenchmarkObserverPace(b *testing.B) {
	for _, stream := range []struct {
		name  string
		data  []byte
		burst int // streams a burst
	}{{"mixed", mixedStream(), 8}, {"large", largeStream(), 2}} {
		b.Run(stream.name, func(b *testing.B) {
			with, without := newPathObserved(b, true, true), newPathObserved(b, true, false)
			q := with.pump.Queue
			buf := make([]byte, len(stream.data))
			send := func(p *path) time.Duration {
				for q.Len() > 0 || q.inUse() > int64(q.blockBytes) { // the observer is still at the last burst
					time.Sleep(time.Millisecond)
				}
				start := time.Now()
				go func() {
					for range stream.burst {
						_, _ = p.w.Write(stream.data)
					}
				}()
				for range stream.burst {
					if _, err := io.ReadFull(p.r, buf); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(start)
			}
			send(with) // the queue's first memory
			var ratios []float64
			for i := 0; b.Loop(); i++ {
				var tWith, tWithout time.Duration
				if i%2 == 0 {
					tWithout, tWith = send(without), send(with)
				} else {
					tWith, tWithout = send(with), send(without)
				}
				ratios = append(ratios, float64(tWithout)/float64(tWith))
			}
			b.StopTimer()
			with.closeFn()
			without.closeFn()
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "pace")
			b.ReportMetric(float64(q.Dropped.Load())/float64(with.pump.Lines.Load()+1), "unobserved/line")
		})
	}
}
