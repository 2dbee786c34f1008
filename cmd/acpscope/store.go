package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
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
// and its facts (failure reason, earlier answers, parent card's session).
func storeOptions(more ...persistence.Option) []persistence.Option {
	return append([]persistence.Option{persistence.WithSubagentText(), persistence.WithCardFacts()}, more...)
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

// storeSink records the subagent events of one run: a persistence.Writer
// takes them off the turn's path (the store can neither stall nor fail the
// turn), and the end of each turn flushes it and accounts for what could
// not be stored.
type storeSink struct {
	store  *persistence.Store
	writer *persistence.Writer
	runID  string // one agent execution per acpscope process and dialect
	log    *slog.Logger

	mu    sync.Mutex
	turns map[string]string // session id → current turn id
	// referrers lists, per child session, the tool calls whose `session`
	// content names it, first seen first (at most
	// persistence.MaxReferences), as --json's referenced_by; launched is
	// this run's card of each child session, which the list is stored on.
	referrers map[string][]string
	launched  map[string]cardKey
	clock     func() time.Time // observation times; nil = now (a replay sets the capture's)
	// turnStart is when the current turn began: its flush is bounded by
	// that plus --timeout and --cancel-grace.
	turnStart time.Time
	// writerClosed is set once the writer is closed (closeWriter), with
	// its final accounting.
	writerClosed bool
	final        persistence.Accounting
}

// Bounds of the store's flushes. A finished turn waits up to
// storeFlushWait for its cards (a store that is down is retried that
// long), a cancelled one only its --cancel-grace; closing the writer
// after that gives up at once what is still not written.
const (
	storeFlushWait = 10 * time.Second
	storeCloseWait = 500 * time.Millisecond
)

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
	runID := randomID()
	return &storeSink{
		store: s, runID: runID, log: log, turns: map[string]string{},
		writer: persistence.NewWriter(s, persistence.WriterOptions{EnsureSessions: true, Journal: "acpscope-" + runID}),
	}, nil
}

// cardKey is a card's session and tool call id.
type cardKey struct{ session, call string }

// record queues ev, sent by an agent of the given dialect, when it is a
// subagent card, and, when ev references child sessions, the referring
// tool call as a fact of each child's card (Facts.ReferencedBy). It never
// fails the turn and waits only while the store is behind by the writer's
// whole queue (persistence.Writer). The dialect goes into the execution
// id, the only place the store keeps it (web.ExecutionID).
func (s *storeSink) record(dialect string, ev adapter.Event) {
	if s == nil || s.writer == nil {
		return
	}
	f := frameOf(ev)
	s.mu.Lock()
	frames := s.referenceFrames(ev, f)
	if f != nil {
		frames = append(frames, f)
	}
	for _, f := range frames {
		turn, ok := s.turns[f.TaskSessionID]
		if !ok {
			turn = "turn-" + randomID()
			s.turns[f.TaskSessionID] = turn
		}
		f.TurnID = turn
	}
	s.mu.Unlock()
	for _, f := range frames {
		f.ExecutionID = s.executionID(dialect)
		if s.clock != nil {
			f.ObservedAt = s.clock()
		}
		s.writer.Record(f)
	}
}

// referenceFrames notes ev's references to child sessions and returns a
// frame carrying only the new list for each referenced child whose card
// this run already stored; it gives card f (ev's own, nil when ev is no
// card) the references its child session has. Called with mu held.
func (s *storeSink) referenceFrames(ev adapter.Event, f *persistence.Frame) []*persistence.Frame {
	if s.referrers == nil {
		s.referrers, s.launched = map[string][]string{}, map[string]cardKey{}
	}
	var out []*persistence.Frame
	for _, r := range ev.SessionRefs {
		list := s.referrers[r.SessionID]
		if !r.Known || ev.ToolCallID == "" || slices.Contains(list, ev.ToolCallID) || len(list) >= persistence.MaxReferences {
			continue
		}
		list = append(list, ev.ToolCallID)
		s.referrers[r.SessionID] = list
		if k, ok := s.launched[r.SessionID]; ok && (f == nil || k != (cardKey{f.TaskSessionID, f.ToolCallID})) {
			out = append(out, &persistence.Frame{TaskSessionID: k.session, TaskID: k.session, ToolCallID: k.call,
				Facts: &persistence.CardFacts{ReferencedBy: slices.Clone(list)}})
		}
	}
	if f != nil && ev.Child != nil && ev.Child.SessionID != "" {
		child := ev.Child.SessionID
		s.launched[child] = cardKey{f.TaskSessionID, f.ToolCallID}
		if list := s.referrers[child]; len(list) > 0 {
			if f.Facts == nil {
				f.Facts = &persistence.CardFacts{}
			}
			f.Facts.ReferencedBy = slices.Clone(list)
		}
	}
	return out
}

// notStoredError is a run whose turn went well but some of whose subagent
// cards could not be stored (exit code 4); it reads as the accounting line.
type notStoredError struct{ line string }

func (e *notStoredError) Error() string { return e.line }

// flushTurn flushes the cards of the turn that just ended to the store:
// until the end of the turn's time (its start plus --timeout and
// --cancel-grace) or storeFlushWait, whichever is first; for a turn that
// was cancelled, only --cancel-grace. A store that is down is retried that
// long; what it still lacks is counted (see endTurn).
func (s *storeSink) flushTurn(o outputFlags, turnErr error) {
	if s == nil || s.writer == nil {
		return
	}
	s.mu.Lock()
	start := s.turnStart
	s.mu.Unlock()
	if start.IsZero() {
		start = time.Now()
	}
	wait := storeFlushWait
	if o.timeout > 0 { // the tap has no turn time of its own
		wait = min(wait, time.Until(start.Add(o.timeout+o.grace)))
	}
	if errors.Is(turnErr, session.ErrCancelled) {
		wait = o.grace
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(wait, 0))
	defer cancel()
	_ = s.writer.Flush(ctx)
}

// endTurn flushes what the session left after its last turn (history, the
// cards a cancel ended) as flushTurn does, only --cancel-grace when ctx
// ended (a signal), and accounts for the run: when cards are missing it
// returns an error naming how many and why as a *notStoredError, unless
// turnErr is set: that keeps its own exit code and the line is printed to
// stderr here.
func (s *storeSink) endTurn(ctx context.Context, stderr io.Writer, o outputFlags, turnErr error) error {
	if s == nil || s.writer == nil {
		return turnErr
	}
	flushErr := turnErr
	if ctx.Err() != nil {
		flushErr = session.ErrCancelled
	}
	s.flushTurn(o, flushErr)
	acc := s.writer.Accounting()
	if acc.NotStored() == 0 {
		return turnErr
	}
	// Cards are missing, so this is the run's last word on the store (its
	// callers end with it): the writer is closed first, which settles the
	// batch in flight and gives up what is queued, so the line counts what
	// the store holds and nothing is written after it. Counting while a
	// batch is in flight said a batch too many whenever closing the writer
	// then committed it.
	if acc = s.closeWriter(); acc.NotStored() == 0 {
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

// close gives the writer storeCloseWait more for what is still queued,
// then closes it (what it could not write is counted) and the store.
func (s *storeSink) close() {
	if s == nil || s.writer == nil {
		return
	}
	s.closeWriter()
	s.store.Close()
}

// closeWriter closes the writer, once, giving it storeCloseWait more for
// what is still queued, and returns its final accounting.
func (s *storeSink) closeWriter() persistence.Accounting {
	if !s.writerClosed {
		ctx, cancel := context.WithTimeout(context.Background(), storeCloseWait)
		defer cancel()
		s.final = s.writer.Close(ctx)
		s.writerClosed = true
	}
	return s.final
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

// frameOf maps an adapter event onto the persistence frame; nil for events
// that are not subagent cards. The ACP session id serves as both the task
// session and the task: acpscope has no task layer of its own.
func frameOf(ev adapter.Event) *persistence.Frame {
	if ev.Payload == nil || ev.Payload.SubagentTask == nil || ev.ToolCallID == "" || ev.SessionID == "" {
		return nil
	}
	t := ev.Payload.SubagentTask
	f := &persistence.Frame{
		TaskSessionID:    ev.SessionID,
		TaskID:           ev.SessionID,
		ToolCallID:       ev.ToolCallID,
		ParentToolCallID: ev.ParentToolCallID,
		ToolStatus:       string(ev.Status),
		Description:      t.Description,
		SubagentType:     t.SubagentType,
		Status:           t.Status,
		AgentID:          t.AgentID,
		Model:            t.Model,
		ChildSessionID:   t.ChildSessionID,
		DurationMs:       t.DurationMs,
		TotalTokens:      t.TotalTokens,
		IsAsync:          t.IsAsync,
		Prompt:           t.Prompt,
		ResultText:       t.ResultText,
		PromptBytes:      t.PromptBytes,
		ResultBytes:      t.ResultBytes,
		ObservedAt:       time.Now(),
	}
	if t.ToolUseCount != nil {
		n := *t.ToolUseCount
		f.ToolUseCount = &n
	}
	// A card in a child session: its parent card is that child session's
	// card (tool call id = the row's session), held in ParentSessionID.
	facts := persistence.CardFacts{ErrorMessage: t.ErrorMessage, EarlierResults: t.EarlierResults, ParentSessionID: ev.ParentSessionID}
	if !facts.IsZero() {
		f.Facts = &facts
	}
	return f
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
