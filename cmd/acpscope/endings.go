package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
)

// endingSignals are the signals that end a session through the cancel path
// (session/cancel, grace, kill), each with its message and exit code.
var endingSignals = map[os.Signal]session.Ending{
	os.Interrupt:    {What: "interrupted (SIGINT)", Code: exitCancelled},
	syscall.SIGTERM: {What: "interrupted (SIGTERM)", Code: exitCancelled},
	syscall.SIGHUP:  {What: "hung up (SIGHUP)", Code: exitHangup},
	syscall.SIGQUIT: {What: "quit (SIGQUIT)", Code: exitQuit},
}

// watchSignals turns the ending signals into the session's end (its
// context's cause), so the running turn is cancelled, its open cards end
// cancelled and the exit code names the signal. A Ctrl-C during an
// interactive turn cancels only that turn (see interrupter). Once the
// session is ending, the next signal has its default effect and ends
// acpscope at once (the process guard still ends the agent); main does not
// watch them for the commands that handle them (ownsSignals). SIGPIPE is
// caught for good, so a write to a closed standard output fails instead of
// killing acpscope (see watchedOutput). The returned func stops watching.
func watchSignals(end context.CancelCauseFunc, in *interrupter) (stop func()) {
	sigs := make(chan os.Signal, 4)
	ending := make([]os.Signal, 0, len(endingSignals))
	for sig := range endingSignals {
		ending = append(ending, sig)
	}
	signal.Notify(sigs, append(ending, syscall.SIGPIPE)...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				cause, ok := endingSignals[sig]
				if !ok {
					continue // SIGPIPE: the failed write reports it
				}
				if sig == os.Interrupt && in.interruptTurn() {
					continue
				}
				signal.Reset(ending...)
				end(&cause)
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// interrupter hands a Ctrl-C to the running interactive turn: the first
// cancels that turn only, and the session goes on with the next prompt.
type interrupter struct {
	mu   sync.Mutex
	turn context.CancelCauseFunc // the running turn's; nil between turns
}

// turnContext returns the context of one interactive turn and its
// release.
func (i *interrupter) turnContext(ctx context.Context) (context.Context, func()) {
	if i == nil {
		return ctx, func() {}
	}
	tctx, cancel := context.WithCancelCause(ctx)
	i.mu.Lock()
	i.turn = cancel
	i.mu.Unlock()
	return tctx, func() {
		i.mu.Lock()
		i.turn = nil
		i.mu.Unlock()
		cancel(nil)
	}
}

// interruptTurn cancels the running interactive turn, if there is one,
// and reports whether it did.
func (i *interrupter) interruptTurn() bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.turn == nil {
		return false
	}
	i.turn(&session.Ending{What: "interrupted (Ctrl-C)", Code: exitCancelled})
	i.turn = nil
	return true
}

// watchedOutput is acpscope's standard output. The first failed write (its
// reader went away: `acpscope run … | head -1`) calls closed, which ends
// the session through the cancel path; from then on output is dropped,
// so the view and the store go on and the cards still end right.
type watchedOutput struct {
	w      io.Writer
	closed func()

	mu     sync.Mutex
	broken bool
}

// Write writes p, or drops it once a write failed.
func (o *watchedOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.broken {
		return len(p), nil
	}
	if _, err := o.w.Write(p); err != nil {
		o.broken = true
		go o.closed()
	}
	return len(p), nil
}
