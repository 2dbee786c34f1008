package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// defaultWebAddr is where `acpscope web` listens without --addr: loopback.
const defaultWebAddr = "127.0.0.1:8765"

// cmdWeb implements `acpscope web [--db DSN] [--addr HOST:PORT]
// [--allow-host NAME]… [--capture FILE]`: the stored sessions in a
// browser, read-only, until interrupted; with --capture, the traffic view
// of that capture's messages too. Every request's Host is checked, whatever --addr:
// loopback names (when the listener covers loopback), the bound address
// and the --allow-host names pass.
func cmdWeb(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("web", e.stderr)
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	addr := fs.String("addr", defaultWebAddr, "listen address; a non-loopback address exposes the store to the network")
	poll := fs.Duration("poll", 2*time.Second, "how often an open page checks the store for changes")
	allow := allowHostFlag(fs)
	capturePath := fs.String("capture", "", "also show this capture's messages (as run --record and tap --record write them) in the traffic view")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("web takes no arguments")
	}
	var tv trafficView
	if *capturePath != "" {
		var err error
		if tv, err = captureTraffic(*capturePath); err != nil {
			return err
		}
	}
	if *poll < 100*time.Millisecond {
		return fmt.Errorf("--poll must be at least 100ms")
	}
	s, err := openStoreReadOnly(ctx, *dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr: %v", err)
	}
	return serveWeb(ctx, e.stdout, "acpscope web", "Ctrl-C stops", s, ln, *allow, *poll, tv)
}

// allowHostFlag defines the repeatable --allow-host flag on fs: the host
// names and addresses, besides loopback and the bound address, that
// requests may be addressed to.
func allowHostFlag(fs *flag.FlagSet) *[]string {
	allow := new([]string)
	fs.Func("allow-host", "a host name or address, besides loopback and the bound address, that requests may be addressed to (repeatable)", func(v string) error {
		if err := web.CheckAllowHost(v); err != nil {
			return err
		}
		*allow = append(*allow, v)
		return nil
	})
	return allow
}

// serveWeb serves the read-only pages of s on ln until ctx ends, then
// closes ln; the address is announced on out, under the name of the
// command serving, with what stops it. Every request's Host is checked:
// loopback names (when the listener covers loopback), the bound address
// and the allow names pass. poll 0 keeps the pages' default; tv, when
// its log is set, adds the traffic view. `acpscope web`, `acpscope run
// --web` and `acpscope tap --web` all serve through it.
func serveWeb(ctx context.Context, out io.Writer, name, stops string, s *persistence.Store, ln net.Listener, allow []string, poll time.Duration, tv trafficView) error {
	opts := web.Options{AllowHosts: allow, PollInterval: poll, Traffic: tv.log, TrafficSource: tv.source, Stop: tv.stop}
	loopback, wildcard := isLoopbackAddr(ln.Addr()), isWildcardAddr(ln.Addr())
	if !loopback {
		// The bound address itself passes; on a specific non-loopback
		// address a loopback name cannot reach the listener, so only that
		// address and the --allow-host names do.
		opts.AllowHosts = append(opts.AllowHosts, ln.Addr().(*net.TCPAddr).IP.String())
		opts.NoLoopback = !wildcard
	}
	srv := &http.Server{
		Handler:           web.Handler(s, opts),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	switch {
	case loopback && len(allow) == 0:
		fmt.Fprintf(out, "%s: %s (loopback only; read-only; %s)\n", name, web.URL(ln.Addr()), stops)
	case loopback:
		fmt.Fprintf(out, "%s: %s (loopback only, also addressed as %s; read-only; %s)\n",
			name, web.URL(ln.Addr()), strings.Join(allow, ", "), stops)
	default:
		fmt.Fprintf(out, "%s: %s (read-only; NOT loopback: anyone who can reach this address can read the store; %s)\n", name, web.URL(ln.Addr()), stops)
		names := "loopback names only"
		if !wildcard {
			names = "only " + ln.Addr().(*net.TCPAddr).IP.String()
		}
		if len(allow) > 0 {
			names += " and " + strings.Join(allow, ", ")
			for _, h := range allow {
				fmt.Fprintf(out, "%s: also %s\n", name, web.HostURL(h, ln.Addr()))
			}
		}
		fmt.Fprintf(out, "%s: requests must be addressed to %s (--allow-host adds a name)\n", name, names)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// isWildcardAddr reports whether a listener's address is a wildcard one
// (0.0.0.0 or ::), which listens on every interface, loopback included.
func isWildcardAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && (tcp.IP == nil || tcp.IP.IsUnspecified())
}

// isLoopbackAddr reports whether a listener's address is a loopback one.
func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
