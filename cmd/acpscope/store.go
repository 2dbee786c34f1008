package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/storesink"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// defaultDSN is the embedded default database: $ACPSCOPE_DB, else
// acpscope.db in $XDG_DATA_HOME/acpscope (~/.local/share/acpscope). With
// create, the directory is made when absent.
func defaultDSN(create bool) (string, error) {
	if dsn := os.Getenv("ACPSCOPE_DB"); dsn != "" {
		return dsn, nil
	}
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no database: set --db or $ACPSCOPE_DB (%v)", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	dir = filepath.Join(dir, "acpscope")
	if !create {
		return filepath.Join(dir, "acpscope.db"), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("database directory: %w", err)
	}
	return filepath.Join(dir, "acpscope.db"), nil
}

// storeOptions are the options of every writing store acpscope opens:
// it keeps each card's prompt and result text, which the web view shows,
// its facts (failure reason, earlier answers, parent card's session), the
// sessions whose observation the tap could not complete, and the trace
// facts (turns, tool calls, permission events) export rebuilds a trace
// from.
func storeOptions(more ...persistence.Option) []persistence.Option {
	return append([]persistence.Option{persistence.WithSubagentText(), persistence.WithCardFacts(), persistence.WithObservationGaps(),
		persistence.WithTraceFacts()}, more...)
}

// openStore opens the database named by dsn ("" = the default) and
// migrates it.
func openStore(ctx context.Context, dsn string, more ...persistence.Option) (*persistence.Store, error) {
	if dsn == "" {
		var err error
		if dsn, err = defaultDSN(true); err != nil {
			return nil, err
		}
	}
	s, err := persistence.Open(ctx, dsn, storeOptions(more...)...)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return s, nil
}

// openStoreReadOnly opens the database for the read commands: it never
// migrates or writes, so a read-only file, directory or role serves, and a
// database that is behind says so.
func openStoreReadOnly(ctx context.Context, dsn string, opts ...persistence.Option) (*persistence.Store, error) {
	if dsn == "" {
		var err error
		if dsn, err = defaultDSN(false); err != nil {
			return nil, err
		}
	}
	s, err := persistence.OpenReadOnly(ctx, dsn, opts...)
	if errors.Is(err, persistence.ErrNeedsMigration) {
		return nil, fmt.Errorf("database: %w (run 'acpscope migrate' to bring it up to date)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return s, nil
}

// storeSink is the store of one acpscope process: the database (which
// --web serves) and the sink that records into it (package storesink).
// Under --no-db both are nil and nothing is stored.
type storeSink struct {
	*storesink.Sink
	store *persistence.Store
}

// openSink opens the configured database and migrates it before anything
// else runs: a migration step that fails or refuses ends the run with
// migrate's message (exit 2), before the agent is started. Under --no-db
// the sink stores nothing. Store warnings go to stderr, throttled.
func openSink(ctx context.Context, o outputFlags, stderr io.Writer) (*storeSink, error) {
	if o.noDB {
		return &storeSink{}, nil
	}
	// The migration's own warnings are held back: its report says the same.
	gate := gatedHandler{next: newThrottle(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), time.Now), open: new(atomic.Bool)}
	log := slog.New(gate)
	s, err := openStore(ctx, o.db, persistence.WithLogger(log))
	if err != nil {
		return nil, err
	}
	if failed := failedSteps(s.Migrate(ctx)); len(failed) > 0 {
		s.Close()
		return nil, errors.New(migrationFailure(failed))
	}
	gate.open.Store(true)
	return &storeSink{Sink: storesink.New(s), store: s}, nil
}

// notStoredError is a run whose turn went well but some of whose subagent
// cards could not be stored (exit code 4); it reads as the accounting line.
type notStoredError struct{ line string }

func (e *notStoredError) Error() string { return e.line }

// flushTurn flushes the cards of the turn that just ended to the store
// within the turn's --timeout and --cancel-grace (storesink.Sink.FlushTurn);
// a turn that was cancelled waits only --cancel-grace.
func (s *storeSink) flushTurn(o outputFlags, turnErr error) {
	s.FlushTurn(o.timeout, o.grace, errors.Is(turnErr, session.ErrCancelled))
}

// endTurn flushes what the session left after its last turn (history, the
// cards a cancel ended) as flushTurn does, only --cancel-grace when ctx
// ended (a signal), and accounts for the run: when cards are missing it
// returns an error naming how many and why as a *notStoredError, unless
// turnErr is set: that keeps its own exit code and the line is printed to
// stderr here.
func (s *storeSink) endTurn(ctx context.Context, stderr io.Writer, o outputFlags, turnErr error) error {
	if s.Sink == nil {
		return turnErr
	}
	flushErr := turnErr
	if ctx.Err() != nil {
		flushErr = session.ErrCancelled
	}
	s.flushTurn(o, flushErr)
	acc := s.Accounting()
	if acc.NotStored() == 0 {
		return turnErr
	}
	// Cards are missing, so this is the run's last word on the store (its
	// callers end with it): the writer is closed first, which settles the
	// batch in flight and gives up what is queued, so the line counts what
	// the store holds and nothing is written after it. Counting while a
	// batch is in flight said a batch too many whenever closing the writer
	// then committed it.
	if acc = s.Sink.Close(); acc.NotStored() == 0 {
		return turnErr
	}
	line := accountingLine(acc)
	if turnErr != nil {
		fmt.Fprintf(stderr, "acpscope: %s\n", line)
		return turnErr
	}
	return &notStoredError{line}
}

// accountingLine is the one line that says what the store lost:
// "stored 17,532 of 20,000 subagent cards; 2,468 not stored: <cause>",
// with the writer's frame counters after it.
func accountingLine(a persistence.Accounting) string {
	st := a.Stats
	return fmt.Sprintf("stored %s of %s subagent cards; %s not stored: %v (frames: %s recorded, %s stored, %s not stored; %s batches retried)",
		thousands(a.Stored), thousands(a.Cards), thousands(a.NotStored()), a.Cause,
		thousands(st.Frames), thousands(st.StoredFrames), thousands(st.NotStoredFrames), thousands(st.Retried))
}

// thousands writes n with comma separators: 17,532.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// close gives the writer storesink.CloseWait more for what is still
// queued, then closes it (what it could not write is counted) and the
// store.
func (s *storeSink) close() {
	if s.Sink == nil {
		return
	}
	s.Sink.Close()
	s.store.Close()
}

// gatedHandler drops records until open is set, then passes them to
// next. Derived handlers share the gate.
type gatedHandler struct {
	next slog.Handler
	open *atomic.Bool
}

// Enabled reports whether the gate is open and next takes the level.
func (h gatedHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.open.Load() && h.next.Enabled(ctx, l)
}

// Handle passes r on once the gate is open.
func (h gatedHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.open.Load() {
		return nil
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs derives a handler behind the same gate.
func (h gatedHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return gatedHandler{next: h.next.WithAttrs(a), open: h.open}
}

// WithGroup derives a handler behind the same gate.
func (h gatedHandler) WithGroup(name string) slog.Handler {
	return gatedHandler{next: h.next.WithGroup(name), open: h.open}
}
