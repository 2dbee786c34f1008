package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// trafficView is the traffic view a web server shows: its messages, and
// where they come from (said on the page). The zero value shows none.
type trafficView struct {
	log    *traffic.Log
	source string
	// stop, when set, lets the pages stop a child (run --web, tap --web
	// --allow-stop).
	stop web.Stopper
}

// liveTraffic is the view of a connection acpscope watches (run --web,
// tap --web), with the default bounds.
func liveTraffic(source string) trafficView {
	return trafficView{log: traffic.New(traffic.Options{}), source: source}
}

// memory is the most the view's log holds (0 without a log).
func (tv trafficView) memory() int64 {
	if tv.log == nil {
		return 0
	}
	return tv.log.MemoryBound()
}

// captureTraffic is the view of a recorded capture (web --capture): its
// messages in order, dated from a fixed origin by their recorded offsets
// (the page shows times since the first message). A capture longer than
// the log's bounds shows its last messages.
func captureTraffic(path string) (trafficView, error) {
	c, err := capture.ReadFile(path)
	if err != nil {
		return trafficView{}, fmt.Errorf("--capture: %v", err)
	}
	tv := trafficView{log: traffic.New(traffic.Options{}), source: "the capture " + path}
	origin := time.Unix(0, 0).UTC()
	for _, e := range c.Entries {
		at := origin
		if e.T != nil {
			at = origin.Add(time.Duration(*e.T) * time.Millisecond)
		}
		tv.log.Add(e.From, e.Msg, at)
	}
	return tv, nil
}

// runWebFlags are run's --web and --allow-host.
type runWebFlags struct {
	addr  *string
	allow *[]string
}

func (f *runWebFlags) register(fs *flag.FlagSet) {
	f.addr = fs.String("web", "", "serve the store's read-only pages, with the connection's traffic, on this address while run runs (e.g. 127.0.0.1:8765; a non-loopback address exposes the store)")
	f.allow = allowHostFlag(fs)
}

// startRunWeb serves run's --web pages on store, with the traffic view
// of tv, until the returned stop is called; without --web it does
// nothing. A port that cannot be bound fails run before the agent starts.
func startRunWeb(ctx context.Context, f runWebFlags, store *persistence.Store, tv trafficView, logw io.Writer) (stop func(), err error) {
	if *f.addr == "" {
		return func() {}, nil
	}
	if store == nil {
		return nil, errors.New("--web serves run's store: it cannot go with --no-db")
	}
	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		return nil, fmt.Errorf("--web: %v", err)
	}
	webCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serveWeb(webCtx, logw, "acpscope run --web", "ends with run", store, ln, *f.allow, 0, tv); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(logw, "acpscope run --web: %v\n", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// tapped is the connection's two sides with the traffic log (when set)
// taking a copy of each line: the editor's side before the agent can see
// it, so the log never shows an answer ahead of its request. Both keep
// the pipes' Close (closer), so ending the connection still unblocks its
// reader.
func (tv trafficView) tapped(toAgent io.Writer, fromAgent io.Reader, stdin, stdout io.Closer) (io.Writer, io.Reader) {
	if tv.log == nil {
		return toAgent, fromAgent
	}
	return struct {
			io.Writer
			io.Closer
		}{io.MultiWriter(tv.log.Tap(capture.FromClient), toAgent), stdin},
		struct {
			io.Reader
			io.Closer
		}{io.TeeReader(fromAgent, tv.log.Tap(capture.FromAgent)), stdout}
}
