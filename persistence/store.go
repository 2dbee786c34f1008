package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/mattn/go-sqlite3"      // registers the "sqlite3" driver
)

// Store records and reads subagent contexts. Its methods are safe for
// concurrent use. A nil *Store records nothing.
type Store struct {
	eng          engine
	writer       *sql.DB // SQLite: one connection; PostgreSQL: the pool
	reader       *sql.DB // SQLite: separate read pool; PostgreSQL: the pool
	owned        []*sql.DB
	log          *slog.Logger
	hostTables   bool
	writeTimeout time.Duration
	now          func() time.Time
	counters     storeCounters
	upsertSQL    string
	upsertStmt   atomic.Pointer[sql.Stmt] // prepared on first successful use
	hooks        hooks
	// readOnly: opened by OpenReadOnly; Migrate refuses to run.
	readOnly bool
	// connectTimeout bounds a PostgreSQL connect whose DSN has none.
	connectTimeout time.Duration
	// healthWindow > 0 makes Health incremental (health_state.go).
	healthWindow time.Duration
	// texts: WithSubagentText; the texts step runs and Record writes
	// texts once textsReady (the step found or made the table).
	texts      bool
	textsReady atomic.Bool
	textsSQL   string                   // textsSQL, or upsertTextsSQL (writableCTEs)
	textsStmt  atomic.Pointer[sql.Stmt] // prepared on first successful use
	// textsFound: a read found the texts table (texts.go), so later reads
	// skip the probe.
	textsFound atomic.Bool
	// factsOn: WithCardFacts; Record writes facts once factsReady (facts.go).
	factsOn    bool
	factsReady atomic.Bool
	// gapsOn: WithObservationGaps; MarkObservationIncomplete writes once
	// gapsReady (gaps.go); gapsFound: a read found the gaps table.
	gapsOn    bool
	gapsReady atomic.Bool
	gapsFound atomic.Bool
	// cardsFound: the merged cards table exists (merged_cards.go), so
	// card reads take it instead of collapsing the rows.
	cardsFound atomic.Bool
	// traceFacts: WithTraceFacts (tracefacts.go).
	traceFacts traceState
}

// hooks are test failpoints. Production code leaves them nil.
type hooks struct {
	// fail is consulted at each named point of a migration step; a non-nil
	// result aborts the step there, as a failing statement would.
	fail func(point string) error
	// executed sees the text of every statement a migration runs.
	executed func(sql string)
	// betweenHealthQueries runs inside the health transaction after the
	// key read (which fixes the snapshot) and before the comparison.
	betweenHealthQueries func()
	// batch runs at the start of every Writer batch; its error fails the
	// batch as the database's would.
	batch func(ctx context.Context) error
}

// exec runs one migration statement through x, letting the executed hook
// see it first.
func (s *Store) exec(ctx context.Context, x execer, q string, args ...any) (sql.Result, error) {
	s.trace(q)
	return x.ExecContext(ctx, q, args...)
}

// trace shows a migration statement to the executed hook.
func (s *Store) trace(q string) {
	if s.hooks.executed != nil {
		s.hooks.executed(q)
	}
}

func (s *Store) failpoint(point string) error {
	if s.hooks.fail == nil {
		return nil
	}
	return s.hooks.fail(point)
}

// Option configures a Store.
type Option func(*Store)

// WithLogger sets the logger that receives WARN records for failed
// migrations and failed writes. The default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// WithWriteTimeout bounds each Record write (default 10s). Record detaches
// from the caller's cancellation, so only this bound applies.
func WithWriteTimeout(d time.Duration) Option { return func(s *Store) { s.writeTimeout = d } }

// WithConnectTimeout bounds each PostgreSQL connect when the DSN sets no
// connect_timeout (default 10 s; PostgreSQL counts whole seconds, so a
// shorter bound rounds up to 1 s). The context passed to Open bounds the
// first connect as well.
func WithConnectTimeout(d time.Duration) Option { return func(s *Store) { s.connectTimeout = d } }

// WithHostTables says whether the store creates the host tables it reads
// (task_sessions, task_session_turns, task_session_messages) when absent.
// Open defaults to true (standalone); OpenDB to false (hosted: only
// kandev_meta and the store's own table are ever created).
func WithHostTables(create bool) Option { return func(s *Store) { s.hostTables = create } }

// Open connects to the database named by dsn, migrates it and returns the
// store. dsn is `postgres://…` / `postgresql://…` for PostgreSQL, or for
// SQLite `sqlite:///abs/path`, `sqlite://rel/path`, `file:…` or a plain
// file path. Open fails only when the database cannot be reached;
// migration failures are logged at WARN and retried on the next Open.
// Connecting honours ctx; a PostgreSQL DSN without connect_timeout gets
// the store's connect timeout (WithConnectTimeout, default 10 s), so a
// server that accepts and never answers cannot hang Open.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s, err := open(ctx, dsn, false, opts)
	if err != nil {
		return nil, err
	}
	s.Migrate(ctx)
	return s, nil
}

// ErrNeedsMigration is returned (wrapped) by OpenReadOnly when the
// database lacks part of the schema this package reads, or does not exist:
// a writing Open (or Migrate) must run first. Check it with errors.Is.
var ErrNeedsMigration = errors.New("persistence: the database needs migration")

// OpenReadOnly opens the database named by dsn (as Open) for reading only:
// it never migrates and never writes. SQLite opens the file read-only
// (mode=ro, query_only), so a read-only file or directory works;
// PostgreSQL sessions run with default_transaction_read_only, so a role
// with SELECT only works. When the schema is behind, it fails with an
// error wrapping ErrNeedsMigration that says what is missing. Writes
// through the returned store fail; Migrate reports a read-only error.
func OpenReadOnly(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s, err := open(ctx, dsn, true, opts)
	if err != nil {
		return nil, err
	}
	if missing, err := s.missingSchema(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("persistence: schema check: %w", err)
	} else if missing != "" {
		s.Close()
		return nil, fmt.Errorf("%w: %s", ErrNeedsMigration, missing)
	}
	return s, nil
}

// open connects the handles of Open and OpenReadOnly and builds the store,
// without migrating.
func open(ctx context.Context, dsn string, readOnly bool, opts []Option) (*Store, error) {
	kind, target, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg := Store{connectTimeout: defaultConnectTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	var writer, reader *sql.DB
	switch kind {
	case SQLite:
		if err := checkSQLiteFile(target, readOnly); err != nil {
			return nil, err
		}
		if readOnly {
			writer, err = openSQLiteReadOnly(ctx, target)
			if err != nil {
				return nil, fmt.Errorf("persistence: open %s read-only: %w", kind, err)
			}
			reader = writer
			break
		}
		writer, err = sql.Open("sqlite3", sqliteDSN(target, "immediate"))
		if err != nil {
			return nil, err
		}
		writer.SetMaxOpenConns(1)
		writer.SetMaxIdleConns(1)
		writer.SetConnMaxLifetime(0)
		writer.SetConnMaxIdleTime(0)
		if isSQLiteMemory(target) {
			reader = writer
		} else {
			reader, err = sql.Open("sqlite3", sqliteDSN(target, "deferred"))
			if err != nil {
				writer.Close()
				return nil, err
			}
			reader.SetMaxOpenConns(4)
		}
	case Postgres:
		writer, err = sql.Open("pgx", postgresSettings(target, cfg.connectTimeout, readOnly))
		if err != nil {
			return nil, err
		}
		reader = writer
	}
	closeAll := func() {
		writer.Close()
		if reader != writer {
			reader.Close()
		}
	}
	if err := writer.PingContext(ctx); err != nil {
		closeAll()
		if kind == SQLite {
			err = explainSQLiteOpen(target, err)
		}
		return nil, fmt.Errorf("persistence: open %s: %w", kind, err)
	}
	base := []Option{WithHostTables(true)}
	if readOnly {
		base = append(base, func(s *Store) { s.readOnly = true })
	}
	s, err := newStore(ctx, kind, writer, reader, append(base, opts...))
	if err != nil {
		closeAll()
		return nil, err
	}
	s.owned = []*sql.DB{writer}
	if reader != writer {
		s.owned = append(s.owned, reader)
	}
	return s, nil
}

// defaultConnectTimeout bounds a PostgreSQL connect whose DSN sets none.
const defaultConnectTimeout = 10 * time.Second

// postgresSettings adds connect_timeout (whole seconds, at least 1) when the
// DSN has none and, for a read-only store, default_transaction_read_only
// (pgx sends unknown parameters as run-time settings). Settings already in
// the DSN win. A DSN that is not a URL is left as it is.
func postgresSettings(target string, timeout time.Duration, readOnly bool) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	q := u.Query()
	if q.Get("connect_timeout") == "" && timeout > 0 {
		q.Set("connect_timeout", strconv.Itoa(int(max(1, (timeout+time.Second-1)/time.Second))))
	}
	if readOnly && q.Get("default_transaction_read_only") == "" {
		q.Set("default_transaction_read_only", "on")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// OpenDB builds a store on handles the host already owns and migrates. On
// SQLite, writer must be the host's single writer handle (a second writer
// yields SQLITE_BUSY) opened with foreign keys on; reader may equal writer.
// On PostgreSQL both may be the same pool. Close does not close them.
func OpenDB(ctx context.Context, kind Engine, writer, reader *sql.DB, opts ...Option) (*Store, error) {
	if writer == nil {
		return nil, errors.New("persistence: OpenDB needs a writer handle")
	}
	if reader == nil {
		reader = writer
	}
	if kind != SQLite && kind != Postgres {
		return nil, fmt.Errorf("persistence: unknown engine %q", kind)
	}
	s, err := newStore(ctx, kind, writer, reader, opts)
	if err != nil {
		return nil, err
	}
	s.Migrate(ctx)
	return s, nil
}

func newStore(ctx context.Context, kind Engine, writer, reader *sql.DB, opts []Option) (*Store, error) {
	s := &Store{
		writer:       writer,
		reader:       reader,
		log:          slog.Default(),
		writeTimeout: 10 * time.Second,
		now:          time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	switch kind {
	case SQLite:
		s.eng = sqliteEngine{}
	case Postgres:
		var version int
		if err := writer.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
			return nil, fmt.Errorf("persistence: server version: %w", err)
		}
		s.eng = postgresEngine{jsonFunc: pgJSONFunc, hasInputIsValid: version >= 160000}
	}
	s.upsertSQL = s.eng.rebind(upsertSQL(s.eng))
	s.textsSQL = textsSQL(s.eng)
	if s.eng.writableCTEs() {
		s.textsSQL = upsertTextsSQL(s.eng)
	}
	return s, nil
}

// Engine reports which engine the store runs on.
func (s *Store) Engine() Engine { return s.eng.kind() }

// Close releases the handles Open created; handles given to OpenDB stay open.
func (s *Store) Close() error {
	var errs []error
	for _, slot := range []*atomic.Pointer[sql.Stmt]{&s.upsertStmt, &s.textsStmt} {
		if st := slot.Swap(nil); st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, db := range s.owned {
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}

// Counters returns this store's writer counters. The process-global expvar
// map ExpvarName holds the sum over every store.
func (s *Store) Counters() Counters { return s.counters.snapshot() }

func parseDSN(dsn string) (Engine, string, error) {
	switch {
	case dsn == "":
		return "", "", errors.New("persistence: empty DSN")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return Postgres, dsn, nil
	case strings.HasPrefix(dsn, "sqlite://"):
		return SQLite, strings.TrimPrefix(dsn, "sqlite://"), nil
	case strings.HasPrefix(dsn, "sqlite:"):
		return SQLite, strings.TrimPrefix(dsn, "sqlite:"), nil
	}
	// Another database's URL ("mysql://…") is not a file name.
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && scheme != "file" && isSchemeName(scheme) {
		return "", "", fmt.Errorf("persistence: unsupported database %q: use postgres://…, sqlite://… or a file path", scheme)
	}
	return SQLite, dsn, nil
}

// isSchemeName reports whether s is a URL scheme of two or more letters
// (one letter is a Windows drive, as in C://data).
func isSchemeName(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

func isSQLiteMemory(target string) bool {
	return strings.HasPrefix(target, ":memory:") || strings.Contains(target, "mode=memory")
}

// sqliteDSN adds the connection settings the store relies on: foreign keys
// (else the cascade never fires), WAL, a busy timeout, the transaction
// lock mode (immediate for the writer, deferred for readers) and
// synchronous=NORMAL, which under WAL survives a process crash intact and
// can lose only the last commits on power loss. Settings already in the
// DSN win (mattn reads the first value of each parameter).
func sqliteDSN(target, txlock string) string {
	params := url.Values{}
	params.Set("_synchronous", "NORMAL")
	params.Set("_foreign_keys", "on")
	params.Set("_journal_mode", "WAL")
	params.Set("_busy_timeout", "5000")
	params.Set("_txlock", txlock)
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	return target + sep + params.Encode()
}

// EnsureSession inserts a task_sessions row when absent, for standalone use
// where no host writes sessions (rows reference their session by foreign
// key, so a frame for an unknown session cannot be stored).
func (s *Store) EnsureSession(ctx context.Context, sessionID, taskID string) error {
	q := s.eng.rebind(`INSERT INTO task_sessions (id, task_id) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`)
	_, err := s.writer.ExecContext(ctx, q, encodeID(sessionID), encodeID(taskID))
	return err
}

// ErrNoIdentity is returned by Upsert for a frame without a session, task
// or tool-call id.
var ErrNoIdentity = errors.New("persistence: frame lacks session, task or tool-call id")

// Record stores one subagent frame. It returns nothing on purpose: a
// failed write is logged at WARN (with session_id and tool_call_id) and
// counted, and never fails the caller's message write, turn or stream.
// It runs on a context detached from ctx's cancellation, bounded by the
// write timeout, and recovers panics. A nil frame is ignored.
func (s *Store) Record(ctx context.Context, f *Frame) {
	if s == nil || f == nil {
		return
	}
	s.counters.add(CounterAttempted)
	if f.TaskSessionID == "" || f.TaskID == "" || f.ToolCallID == "" {
		s.counters.add(CounterSkippedNoIdentity)
		return
	}
	settled := false
	defer func() {
		if p := recover(); p != nil && !settled {
			s.counters.add(CounterFailed)
			s.log.Warn("subagent context persist failed", "session_id", f.TaskSessionID,
				"tool_call_id", f.ToolCallID, "error", fmt.Sprint("panic: ", p))
		}
	}()
	r := normalise(f, s.now)
	if r.anomalous {
		s.counters.add(CounterAnomalousValue)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.writeTimeout)
	defer cancel()
	err := s.write(wctx, r)
	settled = true
	if err != nil {
		s.counters.add(CounterFailed)
		s.log.Warn("subagent context persist failed", "session_id", f.TaskSessionID,
			"tool_call_id", f.ToolCallID, "error", err)
		return
	}
	s.writeFacts(wctx, f, r)
	s.counters.add(CounterPersisted)
	if f.ExecutionID == "" {
		s.counters.add(CounterUnknownExecution)
	}
}

// Upsert normalises f exactly as Record does and writes it, its facts
// after its row as Record does, returning the error instead of counting
// it. It moves no counter. Callers bypassing Record therefore cannot blank
// stored values with "" or 0.
func (s *Store) Upsert(ctx context.Context, f Frame) error {
	if f.TaskSessionID == "" || f.TaskID == "" || f.ToolCallID == "" {
		return ErrNoIdentity
	}
	r := normalise(&f, s.now)
	if err := s.write(ctx, r); err != nil {
		return err
	}
	if st, ok := s.factsStatement(r); ok {
		_, err := s.writer.ExecContext(ctx, st.sql, st.args...)
		return err
	}
	return nil
}

func (s *Store) write(ctx context.Context, r row) error {
	args := s.upsertArgs(r)
	if s.writesTexts(r) {
		return s.writeWithTexts(ctx, args, r)
	}
	return s.execPrepared(ctx, &s.upsertStmt, s.upsertSQL, args...)
}

// upsertArgs are r's values in the order of upsertSQL's placeholders.
func (s *Store) upsertArgs(r row) []any {
	var settled any
	if r.settledAt != nil {
		settled = s.eng.bindTime(*r.settledAt)
	}
	return []any{r.id, r.sessionID, r.taskID, r.turnID, r.toolCallID, r.executionID,
		r.parentToolCallID, r.subagentType, r.description, r.agentID, r.childSessionID, r.model,
		r.agentStatus, r.toolStatus, r.isAsync, r.totalTokens, r.toolUseCount, r.durationMs,
		s.eng.bindTime(r.observedAt), settled, s.eng.bindTime(r.updatedAt)}
}

// writesTexts reports whether r's write carries texts: it has one and the
// store keeps them.
func (s *Store) writesTexts(r row) bool {
	return (r.prompt != nil || r.result != nil) && s.textsReady.Load()
}

// textArgs are r's four text values, in the order textsMerge binds them.
func textArgs(r row) []any { return []any{r.prompt, r.promptBytes, r.result, r.resultBytes} }

// execPrepared runs the write q on the writer, through its statement in
// slot once prepared.
func (s *Store) execPrepared(ctx context.Context, slot *atomic.Pointer[sql.Stmt], q string, args ...any) error {
	if st := slot.Load(); st != nil {
		_, err := st.ExecContext(ctx, args...)
		return err
	}
	_, err := s.writer.ExecContext(ctx, q, args...)
	if err == nil {
		s.prepare(ctx, slot, q)
	}
	return err
}

// prepare readies q in slot once, after it ran successfully: it works
// against this schema, so the writes to come skip parsing it (SQLite
// re-prepares by itself if the schema moves). Never called inside a
// transaction: on SQLite the writer has one connection.
func (s *Store) prepare(ctx context.Context, slot *atomic.Pointer[sql.Stmt], q string) {
	if slot.Load() != nil {
		return
	}
	if st, err := s.writer.PrepareContext(ctx, q); err == nil && !slot.CompareAndSwap(nil, st) {
		st.Close()
	}
}

// upsertSQL is the single atomic statement of every live write (a frame
// with texts on a store that keeps them merges those with it: texts.go): it
// inserts all 22 columns and merges in the conflict clause, without a prior
// read. Every SET expression sees the pre-update row. Columns absent from
// SET (id, identity, source, observed_at) are write-once.
func upsertSQL(e engine) string {
	const t = "task_session_subagents"
	return `INSERT INTO task_session_subagents (
	id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id,
	parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model,
	agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms,
	source, observed_at, settled_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'live', ?, ?, ?)
ON CONFLICT (task_session_id, agent_execution_id, tool_call_id) DO UPDATE SET
	turn_id             = COALESCE(` + t + `.turn_id, excluded.turn_id),
	parent_tool_call_id = COALESCE(excluded.parent_tool_call_id, ` + t + `.parent_tool_call_id),
	subagent_type       = COALESCE(excluded.subagent_type, ` + t + `.subagent_type),
	description         = COALESCE(excluded.description, ` + t + `.description),
	agent_id            = COALESCE(excluded.agent_id, ` + t + `.agent_id),
	child_session_id    = COALESCE(excluded.child_session_id, ` + t + `.child_session_id),
	model               = COALESCE(excluded.model, ` + t + `.model),
	agent_status        = COALESCE(excluded.agent_status, ` + t + `.agent_status),
	tool_status         = CASE WHEN ` + t + `.settled_at IS NOT NULL THEN ` + t + `.tool_status
	                           ELSE COALESCE(excluded.tool_status, ` + t + `.tool_status) END,
	settled_at          = COALESCE(` + t + `.settled_at, excluded.settled_at),
	is_async            = CASE WHEN excluded.is_async = 1 THEN 1 ELSE ` + t + `.is_async END,
	total_tokens        = COALESCE(excluded.total_tokens, ` + t + `.total_tokens),
	tool_use_count      = COALESCE(excluded.tool_use_count, ` + t + `.tool_use_count),
	duration_ms         = COALESCE(excluded.duration_ms, ` + t + `.duration_ms),
	updated_at          = ` + e.later("excluded.updated_at", t+".updated_at")
}

// selectColumns names every column, never *, because a migrated PostgreSQL
// table has agent_execution_id last.
var selectColumns = strings.Join(finalColumns, ", ")

// ListBySession returns a session's subagent contexts ordered by
// observed_at, tool_call_id, agent_execution_id (ascending, byte order).
func (s *Store) ListBySession(ctx context.Context, sessionID string) ([]SubagentContext, error) {
	return s.list(ctx, "task_session_id", encodeID(sessionID))
}

// ListByTurn returns the subagent contexts first observed in a turn, in the
// same order as ListBySession. A row stays under its first turn.
func (s *Store) ListByTurn(ctx context.Context, turnID string) ([]SubagentContext, error) {
	return s.list(ctx, "turn_id", encodeID(turnID))
}

func (s *Store) list(ctx context.Context, column, value string) ([]SubagentContext, error) {
	return s.query(ctx, s.eng.rebind(`SELECT `+selectColumns+`
FROM task_session_subagents
WHERE `+column+` = ?
ORDER BY `+s.eng.canon("observed_at")+`, `+s.eng.binary("tool_call_id")+`, `+s.eng.binary("agent_execution_id")), value)
}

// query runs q, which selects selectColumns, and reads its rows.
func (s *Store) query(ctx context.Context, q, value string) ([]SubagentContext, error) {
	rows, err := s.reader.QueryContext(ctx, q, value)
	if err != nil && s.eng.classify(err) == errStalePlan {
		rows, err = s.reader.QueryContext(ctx, q, value)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SubagentContext
	for rows.Next() {
		var c SubagentContext
		var turn, parent, typ, desc, agent, child, model, astatus, tstatus sql.NullString
		var tokens, count, dur sql.NullInt64
		var isAsync int64
		var observed, settled, updated nullTime
		if err := rows.Scan(&c.ID, &c.TaskSessionID, &c.TaskID, &turn, &c.ToolCallID, &c.AgentExecutionID,
			&parent, &typ, &desc, &agent, &child, &model, &astatus, &tstatus, &isAsync,
			&tokens, &count, &dur, &c.Source, &observed, &settled, &updated); err != nil {
			return nil, err
		}
		c.TaskSessionID, c.TaskID = decodeID(c.TaskSessionID), decodeID(c.TaskID)
		c.ToolCallID, c.AgentExecutionID = decodeID(c.ToolCallID), decodeID(c.AgentExecutionID)
		c.TurnID, c.ParentToolCallID, c.SubagentType = decodeIDPtr(strPtr(turn)), decodeIDPtr(strPtr(parent)), strPtr(typ)
		c.Description, c.AgentID, c.ChildSessionID = strPtr(desc), strPtr(agent), decodeIDPtr(strPtr(child))
		c.Model, c.AgentStatus, c.ToolStatus = strPtr(model), strPtr(astatus), strPtr(tstatus)
		c.IsAsync = isAsync != 0
		c.TotalTokens, c.ToolUseCount, c.DurationMs = intPtr(tokens), intPtr(count), intPtr(dur)
		c.ObservedAt, c.UpdatedAt, c.SettledAt = observed.Time, updated.Time, settled.ptr()
		out = append(out, c)
	}
	return out, rows.Err()
}

func strPtr(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	return &n.String
}

func intPtr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

// sqliteFile is the file a SQLite target names ("" for an in-memory
// database): the part before any query, without a file: scheme.
func sqliteFile(target string) string {
	if isSQLiteMemory(target) || target == "" {
		return ""
	}
	p, _, _ := strings.Cut(target, "?")
	if rest, ok := strings.CutPrefix(p, "file:"); ok {
		if u, err := url.PathUnescape(rest); err == nil {
			rest = u
		}
		p = strings.TrimPrefix(rest, "//")
	}
	return p
}

// checkSQLiteFile reports, before SQLite does in vaguer words, a database
// that cannot be opened as asked: for reading, a missing file (it needs
// migration: a writing open creates it); for writing, a missing directory.
func checkSQLiteFile(target string, readOnly bool) error {
	path := sqliteFile(target)
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("persistence: SQLite database %s: %w", path, err)
	}
	if readOnly {
		return fmt.Errorf("%w: no database at %s", ErrNeedsMigration, path)
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("persistence: cannot create the SQLite database %s: directory %s: %w", path, dir, err)
	}
	return nil
}

// explainSQLiteOpen turns SQLite's "unable to open database file" for a
// writing open into the reason: the directory is not writable (SQLite
// creates the database, and beside it the -wal and -shm files of WAL
// mode). It writes nothing unless the open already failed, and then only
// a temporary file it removes at once.
func explainSQLiteOpen(target string, err error) error {
	path := sqliteFile(target)
	if path == "" {
		return err
	}
	dir := filepath.Dir(path)
	f, terr := os.CreateTemp(dir, ".acp-write-check-*")
	if terr == nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	return fmt.Errorf("directory %s is not writable (SQLite creates %s and its -wal and -shm files there; read commands open it read-only): %w",
		dir, filepath.Base(path), err)
}

// openSQLiteReadOnly opens target with mode=ro and query_only, so SQLite
// writes nothing. A WAL database whose directory is not writable cannot
// get its shared-memory file (SQLite then reports it cannot open or
// initialise it); only then is it opened immutable (no locking), the one
// way SQLite reads it there. Any other error (a busy lock included) is
// returned as it is.
func openSQLiteReadOnly(ctx context.Context, target string) (*sql.DB, error) {
	var first error
	for _, immutable := range []bool{false, true} {
		db, err := sql.Open("sqlite3", sqliteReadOnlyDSN(target, immutable))
		if err == nil {
			db.SetMaxOpenConns(4)
			var n int
			if err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err == nil {
				return db, nil
			}
			db.Close()
		}
		if first == nil {
			first = err
		}
		var se sqlite3.Error
		if !errors.As(err, &se) || (se.Code != sqlite3.ErrCantOpen && se.Code != sqlite3.ErrReadonly) {
			break
		}
	}
	return nil, first
}

// sqliteReadOnlyDSN is target as a file: URI with mode=ro (and, when
// asked, immutable=1), query_only, a busy timeout and deferred
// transactions. Other parameters of the DSN are kept.
func sqliteReadOnlyDSN(target string, immutable bool) string {
	p, rawQuery, _ := strings.Cut(target, "?")
	q, _ := url.ParseQuery(rawQuery)
	if !strings.HasPrefix(p, "file:") {
		p = "file:" + (&url.URL{Path: p}).EscapedPath()
	}
	q.Set("mode", "ro")
	q.Set("_query_only", "1")
	q.Set("_txlock", "deferred")
	if q.Get("_busy_timeout") == "" {
		q.Set("_busy_timeout", "5000")
	}
	if immutable {
		q.Set("immutable", "1")
	}
	return p + "?" + q.Encode()
}

// missingSchema names what a read needs and the database lacks ("" when
// nothing): kandev_meta, the messages table and task_session_subagents in
// its execution-aware shape with every column.
func (s *Store) missingSchema(ctx context.Context) (string, error) {
	var missing []string
	for _, tc := range [][2]string{{"kandev_meta", "value"}, {"task_session_messages", "metadata"}} {
		has, err := s.eng.hasColumn(ctx, s.reader, tc[0], tc[1])
		if err != nil {
			return "", err
		}
		if !has {
			missing = append(missing, "table "+tc[0])
		}
	}
	sh, err := s.eng.probe(ctx, s.reader)
	switch {
	case err != nil:
		return "", err
	case !sh.exists:
		missing = append(missing, "table task_session_subagents")
	case sh.foreign() != nil:
		missing = append(missing, sh.foreign().Error())
	case !sh.amended():
		missing = append(missing, "the execution-aware shape of task_session_subagents")
	default:
		for _, c := range finalColumns {
			if _, ok := sh.columns[c]; !ok {
				missing = append(missing, "column task_session_subagents."+c)
			}
		}
	}
	return strings.Join(missing, ", "), nil
}
