package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
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
func openStore(ctx context.Context, dsn string) (*persistence.Store, error) {
	if dsn == "" {
		var err error
		if dsn, err = defaultDSN(true); err != nil {
			return nil, err
		}
	}
	s, err := persistence.Open(ctx, dsn, storeOptions()...)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return s, nil
}

// openStoreReadOnly opens the database for the read commands: it never
// migrates or writes, so a read-only file, directory or role serves, and a
// database that is behind says so.
func openStoreReadOnly(ctx context.Context, dsn string) (*persistence.Store, error) {
	if dsn == "" {
		var err error
		if dsn, err = defaultDSN(false); err != nil {
			return nil, err
		}
	}
	s, err := persistence.OpenReadOnly(ctx, dsn)
	if errors.Is(err, persistence.ErrNeedsMigration) {
		return nil, fmt.Errorf("database: %w (run 'acpscope migrate' to bring it up to date)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return s, nil
}

// storeSink records the subagent events of one connection.
type storeSink struct {
	store *persistence.Store
	ctx   context.Context
	runID string // one agent execution per acpscope process and dialect

	mu       sync.Mutex
	sessions map[string]bool
	turns    map[string]string // session id → current turn id
	adopted  map[string]string // session id → the execution id a --resume reuses (see sinkturns.go)
	clock    func() time.Time  // observation times; nil = now (a replay sets the capture's)
}

// openSink opens the configured database, or returns a sink that stores
// nothing under --no-db.
func openSink(ctx context.Context, o outputFlags) (*storeSink, func(), error) {
	if o.noDB {
		return &storeSink{}, func() {}, nil
	}
	s, err := openStore(ctx, o.db)
	if err != nil {
		return nil, nil, err
	}
	sink := &storeSink{
		store: s, ctx: context.WithoutCancel(ctx), runID: randomID(),
		sessions: map[string]bool{}, turns: map[string]string{},
	}
	return sink, func() { s.Close() }, nil
}

// record stores ev, sent by an agent of the given dialect, when it is a
// subagent card. It never fails the turn: the store logs and counts its
// own write failures. The dialect goes into the execution id, the only
// place the store keeps it (web.ExecutionID).
func (s *storeSink) record(dialect string, ev adapter.Event) {
	if s == nil || s.store == nil {
		return
	}
	f := frameOf(ev)
	if f == nil {
		return
	}
	s.mu.Lock()
	if !s.sessions[f.TaskSessionID] {
		if err := s.store.EnsureSession(s.ctx, f.TaskSessionID, f.TaskID); err == nil {
			s.sessions[f.TaskSessionID] = true
		}
	}
	turn, ok := s.turns[f.TaskSessionID]
	if !ok {
		turn = "turn-" + randomID()
		s.turns[f.TaskSessionID] = turn
	}
	s.mu.Unlock()
	f.ExecutionID = s.executionID(dialect, f.TaskSessionID)
	f.TurnID = turn
	if s.clock != nil {
		f.ObservedAt = s.clock()
	}
	s.store.Record(s.ctx, f)
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

// cmdSubagents implements `acpscope subagents --session ID [--db DSN]`.
func cmdSubagents(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("subagents", e.stderr)
	session := fs.String("session", "", "the session whose subagent contexts to list (required)")
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *session == "" || fs.NArg() > 0 {
		return fmt.Errorf("subagents needs --session ID and no other arguments")
	}
	s, err := openStoreReadOnly(ctx, *dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	rows, err := s.ListBySession(ctx, *session)
	if err != nil {
		return err
	}
	writeContexts(e.stdout, rows)
	return nil
}

// writeContexts prints stored contexts as a table, in stored order. Every
// stored field passes the sanitiser: it came from an agent.
func writeContexts(w io.Writer, rows []persistence.SubagentContext) {
	writeTable(w, rows, "no subagent contexts stored for this session",
		"OBSERVED\tTOOL CALL\tPARENT\tTYPE\tDESCRIPTION\tTOOL STATUS\tAGENT STATUS\tMODEL\tTOKENS\tTOOLS\tDURATION\tASYNC",
		func(r persistence.SubagentContext) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v",
				r.ObservedAt.UTC().Format(time.RFC3339), safetext.Text(r.ToolCallID), deref(r.ParentToolCallID), deref(r.SubagentType),
				deref(r.Description), deref(r.ToolStatus), deref(r.AgentStatus), deref(r.Model),
				num(r.TotalTokens), num(r.ToolUseCount), num(r.DurationMs), r.IsAsync)
		})
}

// writeTable prints rows as a table under the tab-separated header, one
// line per row from line, in the column layout every acpscope table
// shares; empty alone when there are no rows.
func writeTable[T any](w io.Writer, rows []T, empty, header string, line func(T) string) {
	if len(rows) == 0 {
		fmt.Fprintln(w, empty)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, line(r))
	}
	tw.Flush()
}

// deref is a stored optional text, sanitised; "-" when absent.
func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return safetext.Text(*s)
}

func num(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}
