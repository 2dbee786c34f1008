package tap

import (
	"bytes"
	"io"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// The traffic log (--web) gets every observed line, both directions, in
// wire order, a line that is no message included.
func TestObserverFeedsTheTrafficLog(t *testing.T) {
	log := traffic.New(traffic.Options{})
	obs, err := NewObserver(ObserverConfig{View: view.NewTerminal(io.Discard, false), Traffic: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		from capture.Direction
		line string
	}{
		{capture.FromClient, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{capture.FromAgent, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}` + "\r"},
		{capture.FromClient, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}`},
		{capture.FromAgent, "garbage"},
		{capture.FromAgent, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}`},
	} {
		obs.Observe(l.from, []byte(l.line))
	}
	p := log.Since(0, traffic.Filter{}, 100)
	if len(p.Frames) != 5 {
		t.Fatalf("%d frames, want 5: %+v", len(p.Frames), p.Frames)
	}
	kinds := map[string]int{}
	for _, f := range p.Frames {
		kinds[f.From+" "+f.Kind+" "+f.Method]++
	}
	for _, want := range []string{"client request initialize", "client request session/new", "agent response initialize", "agent invalid ", "agent response session/new"} {
		if kinds[want] != 1 {
			t.Errorf("no %q among %v", want, kinds)
		}
	}
	if got := log.Roots(); len(got) != 1 || got[0] != "s1" {
		t.Errorf("roots %q", got)
	}
}

// BenchmarkObserveTraffic is the observer's cost per byte of real-size
// agent traffic (mixedStream) without and with the traffic log (--web):
// what the log adds to the observer's work, off the pumps.
func BenchmarkObserveTraffic(b *testing.B) {
	lines := bytes.Split(bytes.TrimSuffix(mixedStream(), []byte("\n")), []byte("\n"))
	size := 0
	for _, l := range lines {
		size += len(l) + 1
	}
	for _, withLog := range []bool{false, true} {
		name := "observer"
		if withLog {
			name = "observer+traffic"
		}
		b.Run(name, func(b *testing.B) {
			cfg := ObserverConfig{View: view.NewTerminal(io.Discard, false)}
			if withLog {
				cfg.Traffic = traffic.New(traffic.Options{})
			}
			obs, err := NewObserver(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, l := range lines {
					obs.Observe(capture.FromAgent, l)
				}
			}
		})
	}
}
