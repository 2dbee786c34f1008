package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// defaultWebAddr is where `acpscope web` listens without --addr: loopback.
const defaultWebAddr = "127.0.0.1:8765"

// cmdWeb implements `acpscope web [--db DSN] [--addr HOST:PORT]`: the
// stored sessions in a browser, read-only, until interrupted.
func cmdWeb(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("web", e.stderr)
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	addr := fs.String("addr", defaultWebAddr, "listen address; a non-loopback address exposes the store to the network")
	poll := fs.Duration("poll", 2*time.Second, "how often an open page checks the store for changes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("web takes no arguments")
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
	return serveWeb(ctx, e.stdout, "acpscope web", "Ctrl-C stops", s, ln, web.Options{PollInterval: *poll})
}

// serveWeb serves the read-only pages of s on ln until ctx ends, then
// closes ln; the address is announced on out, under the name of the
// command serving, with what stops it. opts.LoopbackOnly is set from the
// address. `acpscope web` and `acpscope tap --web` both serve through it.
func serveWeb(ctx context.Context, out io.Writer, name, stops string, s *persistence.Store, ln net.Listener, opts web.Options) error {
	loopback := isLoopbackAddr(ln.Addr())
	opts.LoopbackOnly = loopback
	srv := &http.Server{
		Handler:           web.Handler(s, opts),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	if loopback {
		fmt.Fprintf(out, "%s: %s (loopback only; read-only; %s)\n", name, web.URL(ln.Addr()), stops)
	} else {
		fmt.Fprintf(out, "%s: %s (read-only; NOT loopback: anyone who can reach this address can read the store; %s)\n", name, web.URL(ln.Addr()), stops)
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

// isLoopbackAddr reports whether a listener's address is a loopback one.
func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
