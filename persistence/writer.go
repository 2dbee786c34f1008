package persistence

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Writer takes subagent frames off the caller's path: Record queues a
// frame and returns, and one goroutine writes what is queued in batches.
// Frames of one card that wait together are merged (mergeRows, the rule
// the upsert applies), so a card updated a hundred times while a batch
// commits costs one write. A batch is one transaction on SQLite and one
// pipelined round trip (an implicit transaction) on PostgreSQL.
//
// Delay: a frame is in the batch that starts after the one in flight when
// it was queued, so while the store answers it is written within about
// two batch commits (no timer holds frames back). A failed batch is
// retried with backoff (50 ms doubling to 2 s) for as long as the store
// fails, until Close gives up; what Close cannot write is counted as not
// stored, with the cause (Accounting).
//
// Bounds: at most WriterOptions.MaxPending cards and MaxPendingBytes of
// their texts wait. Record on a full queue waits for room (so a slow store
// slows the caller down to its pace) for at most MaxBlock; past that the
// writer sheds new cards at once, counting each as not stored, until the
// queue has room again. A frame of a card already waiting never waits.
type Writer struct {
	s   *Store
	opt WriterOptions

	ctx    context.Context // writes; cancelled by Close when it gives up
	cancel context.CancelFunc
	wake   chan struct{} // cap 1: something was queued
	done   chan struct{} // the loop ended

	mu       sync.Mutex
	pending  map[cardKey]*queued
	order    []cardKey     // pending keys, oldest first
	bytes    int64         // text bytes of pending entries
	inflight int           // entries of the batch being written
	room     chan struct{} // closed and replaced when the queue shrinks
	idle     chan struct{} // closed and replaced when nothing is pending or in flight
	shedding bool
	closed   bool
	cards    map[cardKey]cardState
	traces   traceQueue        // trace facts (tracefacts_writer.go)
	sessions map[string]string // sessions not yet written: id → task id
	journal  bool              // the journal key still has to be written
	cause    error             // the latest write error, nil once a batch succeeds
	lost     error             // the first cause of a card not stored
	stats    WriterStats
	warned   time.Time // when the last failure was logged
	muted    int       // failures not logged since then
}

// WriterOptions configure a Writer. Zero fields take the defaults.
type WriterOptions struct {
	// MaxPending is the most distinct cards waiting (default 16,384).
	MaxPending int
	// MaxPendingBytes bounds the prompt and result text bytes waiting
	// (default 64 MiB).
	MaxPendingBytes int64
	// MaxBlock is how long Record waits for room in a full queue before
	// the writer sheds new cards (default 1 s).
	MaxBlock time.Duration
	// MaxBatch is the most cards one batch writes (default 1,000).
	MaxBatch int
	// EnsureSessions makes each batch insert the task_sessions rows of
	// its cards when absent (standalone use, as EnsureSession), in the
	// batch's transaction, so a card never waits on its session.
	EnsureSessions bool
	// Journal, when not empty, names this writer in kandev_meta (key
	// WriterJournalPrefix+Journal) from its first batch until Close
	// confirms every card stored, or records there what was not stored.
	// Health reports every such key, so a writer that lost cards, or one
	// that ended without confirming (a crash, a full disk), is never
	// reported healthy.
	Journal string
}

// WriterJournalPrefix starts the kandev_meta key of a writer's journal
// (WriterOptions.Journal).
const WriterJournalPrefix = "subagent_context_writer:"

// WriterStats counts what a Writer did. Frames are the Record calls that
// passed the identity gate; cards are distinct keys.
type WriterStats struct {
	Frames, Cards int64
	// StoredFrames were written (alone or merged into a write).
	StoredFrames int64
	// NotStoredFrames were given up: shed on a full queue, refused by the
	// database, or still queued when Close gave up.
	NotStoredFrames int64
	// Batches were committed; Retried failed and were tried again.
	Batches, Retried int64
	// TraceFacts are the trace facts recorded (RecordTurn, RecordToolCall,
	// RecordToolEvent); StoredTraceFacts those written, and
	// TraceFactsNotStored those shed or given up.
	TraceFacts, StoredTraceFacts, TraceFactsNotStored int64
}

// Accounting is what a Writer stored, by card.
type Accounting struct {
	// Cards is every card recorded; Stored those whose every frame is
	// stored. Cards − Stored were not (or not completely) stored.
	Cards, Stored int64
	// Cause is the first reason a card was not stored; nil when all were.
	Cause error
	Stats WriterStats
}

// NotStored is the number of cards not completely stored.
func (a Accounting) NotStored() int64 { return a.Cards - a.Stored }

type cardKey struct{ session, execution, toolCall string }

type cardState uint8

const (
	cardPending cardState = iota
	cardStored
	cardLost // a frame was given up: the row may lack what it said
)

type queued struct {
	r      row
	frames int64
}

func (q *queued) textBytes() int64 { return textLen(q.r.prompt) + textLen(q.r.result) }

func textLen(s *string) int64 {
	if s == nil {
		return 0
	}
	return int64(len(*s))
}

// NewWriter starts a writer over s. Close it to write what is queued and
// stop its goroutine; s itself stays open.
func NewWriter(s *Store, opt WriterOptions) *Writer {
	if opt.MaxPending <= 0 {
		opt.MaxPending = 16384
	}
	if opt.MaxPendingBytes <= 0 {
		opt.MaxPendingBytes = 64 << 20
	}
	if opt.MaxBlock <= 0 {
		opt.MaxBlock = time.Second
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 1000
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		s: s, opt: opt, ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		pending: map[cardKey]*queued{}, room: make(chan struct{}), idle: make(chan struct{}),
		cards: map[cardKey]cardState{}, sessions: map[string]string{},
		journal: opt.Journal != "",
	}
	close(w.idle)
	go w.loop()
	return w
}

// Record queues one frame. It applies Store.Record's counters and identity
// gate, never fails the caller, and waits only while the queue is full, at
// most MaxBlock. A nil writer or frame is a no-op.
func (w *Writer) Record(f *Frame) {
	if w == nil || f == nil {
		return
	}
	s := w.s
	s.counters.add(CounterAttempted)
	if f.TaskSessionID == "" || f.TaskID == "" || f.ToolCallID == "" {
		s.counters.add(CounterSkippedNoIdentity)
		return
	}
	r := normalise(f, s.now)
	if r.anomalous {
		s.counters.add(CounterAnomalousValue)
	}
	k := cardKey{r.sessionID, r.executionID, r.toolCallID}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Frames++
	if _, seen := w.cards[k]; !seen {
		w.stats.Cards++
		w.cards[k] = cardPending
	} else if w.cards[k] == cardStored {
		w.cards[k] = cardPending
	}
	if w.closed {
		w.giveUp(k, 1, errors.New("the writer was closed"))
		return
	}
	if q, ok := w.pending[k]; ok {
		w.bytes -= q.textBytes()
		q.r = mergeRows(q.r, r)
		q.frames++
		w.bytes += q.textBytes()
		return
	}
	if !w.waitForRoom(textLen(r.prompt) + textLen(r.result)) {
		w.giveUp(k, 1, fmt.Errorf("the store fell behind: %d cards were waiting to be written", len(w.pending)))
		return
	}
	w.push(k, &queued{r: r, frames: 1})
	if w.opt.EnsureSessions {
		if _, ok := w.sessions[r.sessionID]; !ok {
			w.sessions[r.sessionID] = r.taskID
		}
	}
}

// waitForRoom waits, with w.mu held (released while waiting), until a card
// of n text bytes fits. It reports false when the writer sheds instead.
func (w *Writer) waitForRoom(n int64) bool {
	full := func() bool {
		return len(w.pending) >= w.opt.MaxPending || (len(w.pending) > 0 && w.bytes+n > w.opt.MaxPendingBytes)
	}
	if !full() {
		w.shedding = false
		return true
	}
	if w.shedding {
		return false
	}
	deadline := time.NewTimer(w.opt.MaxBlock)
	defer deadline.Stop()
	for full() {
		room := w.room
		w.mu.Unlock()
		select {
		case <-room:
		case <-deadline.C:
			w.mu.Lock()
			w.shedding = full()
			return !w.shedding
		}
		w.mu.Lock()
		if w.closed {
			return false
		}
	}
	return true
}

// push queues q under k, with w.mu held.
func (w *Writer) push(k cardKey, q *queued) {
	if len(w.pending) == 0 && len(w.traces.order) == 0 && w.inflight == 0 {
		w.idle = make(chan struct{})
	}
	w.pending[k] = q
	w.order = append(w.order, k)
	w.bytes += q.textBytes()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// giveUp counts frames of card k as not stored, with w.mu held.
func (w *Writer) giveUp(k cardKey, frames int64, cause error) {
	w.stats.NotStoredFrames += frames
	w.cards[k] = cardLost
	if w.lost == nil {
		w.lost = cause
	}
	for range frames {
		w.s.counters.add(CounterFailed)
	}
}

// Flush waits until every frame recorded so far is written (or given up),
// or ctx ends; then it returns ctx's error. While the store fails, the
// writer keeps retrying, so Flush waits for it to come back.
func (w *Writer) Flush(ctx context.Context) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	idle := w.idle
	w.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close flushes (until ctx ends), stops the writer and writes its journal.
// Frames still queued when ctx ends are counted as not stored, with the
// store's last error as the cause; a write in flight is abandoned (its
// context cancelled). Close never waits more than about a second past ctx
// (half for a write in flight to return, half for the journal).
// It returns the accounting.
func (w *Writer) Close(ctx context.Context) Accounting {
	if w == nil {
		return Accounting{}
	}
	flushErr := w.Flush(ctx)
	w.mu.Lock()
	w.closed = true
	close(w.room)
	w.room = make(chan struct{})
	w.mu.Unlock()
	w.cancel()
	select {
	case <-w.done:
	case <-time.After(500 * time.Millisecond):
		// A driver that ignores cancellation: leave its goroutine behind.
	}
	w.mu.Lock()
	cause := w.cause
	if cause == nil && flushErr != nil {
		cause = errors.New("the store did not finish writing before the end of the run")
	}
	for _, k := range w.order {
		if q, ok := w.pending[k]; ok {
			w.giveUp(k, q.frames, fmt.Errorf("not written before the end: %w", cause))
		}
	}
	w.pending, w.order, w.bytes, w.inflight = map[cardKey]*queued{}, nil, 0, 0
	w.dropTraces()
	w.markIdle() // nothing is left to wait for
	acc := w.accountingLocked()
	w.mu.Unlock()
	w.closeJournal(acc)
	return acc
}

// Accounting is what the writer stored so far, by card.
func (w *Writer) Accounting() Accounting {
	if w == nil {
		return Accounting{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.accountingLocked()
}

func (w *Writer) accountingLocked() Accounting {
	a := Accounting{Cards: int64(len(w.cards)), Stats: w.stats}
	notStored := false
	for _, st := range w.cards {
		if st == cardStored {
			a.Stored++
		} else {
			notStored = true
		}
	}
	if notStored {
		a.Cause = w.lost
		if a.Cause == nil {
			a.Cause = w.cause
		}
		if a.Cause == nil {
			a.Cause = errors.New("still waiting to be written")
		}
	}
	return a
}

// batch is what one write takes: its cards and the sessions they need,
// or (alone, before any card) the writer's journal key.
type batch struct {
	keys    []cardKey
	entries []*queued
	// traceKeys and traces are its trace facts.
	traceKeys []traceKey
	traces    []*traceFact
	sessions  map[string]string
	journal   string // the journal key to write, "" when written
}

// loop writes batches until Close cancels w.ctx.
func (w *Writer) loop() {
	defer close(w.done)
	backoff := time.Duration(0)
	for {
		select {
		case <-w.wake:
		case <-w.ctx.Done():
			return
		}
		for {
			b := w.take()
			if len(b.entries) == 0 && len(b.traces) == 0 && b.journal == "" {
				break
			}
			err := w.s.writeBatch(w.ctx, b)
			if err != nil && w.s.eng.classify(err) == errRejected && len(b.entries)+len(b.traces) > 1 {
				err = w.writeOneByOne(b)
			} else {
				w.settle(b, err)
			}
			if err == nil {
				backoff = 0
				continue
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), 2*time.Second)
			select {
			case <-time.After(backoff):
			case <-w.ctx.Done():
				return
			}
		}
	}
}

// take moves up to MaxBatch pending cards into a batch.
func (w *Writer) take() batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.journal && len(w.order) > 0 {
		// The journal goes first, alone: no card is stored before the
		// store says that this writer has yet to confirm its cards.
		return batch{journal: WriterJournalPrefix + w.opt.Journal}
	}
	n := min(len(w.order), w.opt.MaxBatch)
	b := batch{keys: w.order[:n:n], entries: make([]*queued, n)}
	for i, k := range b.keys {
		q := w.pending[k]
		delete(w.pending, k)
		w.bytes -= q.textBytes()
		b.entries[i] = q
		if task, ok := w.sessions[k.session]; ok {
			if b.sessions == nil {
				b.sessions = map[string]string{}
			}
			b.sessions[k.session] = task
		}
	}
	w.order = w.order[n:]
	w.inflight = n
	if n > 0 {
		close(w.room)
		w.room = make(chan struct{})
	}
	w.takeTraces(&b, w.opt.MaxBatch-n)
	return b
}

// writeOneByOne writes, card by card, a batch the database refused, so
// that one card it refuses does not hold back the others: each refused
// card is given up. Any other failure stops it; the cards not yet written
// are queued again and the error returned.
func (w *Writer) writeOneByOne(b batch) error {
	for i := range b.entries {
		one := batch{keys: b.keys[i : i+1], entries: b.entries[i : i+1], sessions: b.sessions, journal: b.journal}
		err := w.s.writeBatch(w.ctx, one)
		if err != nil && w.s.eng.classify(err) != errRejected {
			w.settle(batch{keys: b.keys[i:], entries: b.entries[i:], traceKeys: b.traceKeys, traces: b.traces}, err)
			return err
		}
		w.settle(one, err)
	}
	for i := range b.traces {
		one := batch{traceKeys: b.traceKeys[i : i+1], traces: b.traces[i : i+1]}
		err := w.s.writeBatch(w.ctx, one)
		if err != nil && w.s.eng.classify(err) != errRejected {
			w.settle(batch{traceKeys: b.traceKeys[i:], traces: b.traces[i:]}, err)
			return err
		}
		w.settle(one, err)
	}
	return nil
}

// settle books a batch's outcome: written, refused (given up), or failed
// (queued again before anything newer of the same card).
func (w *Writer) settle(b batch, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight -= len(b.entries)
	rejected := err != nil && w.s.eng.classify(err) == errRejected
	w.settleTraces(b, err, rejected)
	switch {
	case err == nil:
		w.stats.Batches++
		for i, k := range b.keys {
			q := b.entries[i]
			w.stats.StoredFrames += q.frames
			for range q.frames {
				w.s.counters.add(CounterPersisted)
				if k.execution == UnknownExecution {
					w.s.counters.add(CounterUnknownExecution)
				}
			}
			if _, again := w.pending[k]; !again && w.cards[k] == cardPending {
				w.cards[k] = cardStored
			}
		}
		for id := range b.sessions {
			delete(w.sessions, id)
		}
		if b.journal != "" {
			w.journal = false
		}
		if w.cause != nil {
			w.s.log.Warn("subagent context store writes again", "failures_not_logged", w.muted)
			w.muted = 0
		}
		w.cause = nil
	case rejected:
		if b.journal != "" { // the store cannot keep a journal: write the cards without one
			w.journal = false
		}
		for i, k := range b.keys {
			w.giveUp(k, b.entries[i].frames, fmt.Errorf("the database refused the write: %w", err))
		}
		w.warn("subagent context persist refused; not stored", err, b)
	default:
		w.stats.Retried++
		if w.ctx.Err() == nil || w.cause == nil { // keep the cause of an outage over Close's cancel
			w.cause = err
		}
		var again []cardKey
		for i, k := range b.keys {
			q := b.entries[i]
			if newer, ok := w.pending[k]; ok {
				w.bytes -= newer.textBytes()
				newer.r = mergeRows(q.r, newer.r)
				newer.frames += q.frames
				w.bytes += newer.textBytes()
				continue
			}
			w.pending[k] = q
			w.bytes += q.textBytes()
			again = append(again, k)
		}
		w.order = append(again, w.order...)
		w.warn("subagent context persist failed; retrying", err, b)
	}
	if len(w.pending) == 0 && len(w.traces.order) == 0 && w.inflight <= 0 {
		w.markIdle()
	}
}

// markIdle wakes Flush, with w.mu held; it may run more than once.
func (w *Writer) markIdle() {
	select {
	case <-w.idle:
	default:
		close(w.idle)
	}
}

// warn logs a failed batch: the first of an outage, then at most one a
// minute with the number not logged in between.
func (w *Writer) warn(msg string, err error, b batch) {
	now := time.Now()
	if !w.warned.IsZero() && now.Sub(w.warned) < time.Minute {
		w.muted++
		return
	}
	var k cardKey
	if len(b.keys) > 0 {
		k = b.keys[0]
	}
	w.s.log.Warn(msg, "cards", len(b.keys),
		"session_id", k.session, "tool_call_id", k.toolCall, "error", err, "failures_not_logged", w.muted)
	w.warned, w.muted = now, 0
}

// closeJournal replaces the journal key with the outcome: removed when
// every card was stored, else what was not stored. A store that cannot
// take it keeps the "running" value, which health reports as unconfirmed.
func (w *Writer) closeJournal(acc Accounting) {
	if w.opt.Journal == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalCloseWait)
	defer cancel()
	key := WriterJournalPrefix + w.opt.Journal
	var err error
	if acc.NotStored() == 0 {
		_, err = w.s.writer.ExecContext(ctx, w.s.eng.rebind(`DELETE FROM kandev_meta WHERE key = ?`), key)
	} else {
		v := fmt.Sprintf("lost %d of %d subagent cards at %s: %v", acc.NotStored(), acc.Cards, keyText(time.Now()), acc.Cause)
		_, err = w.s.writer.ExecContext(ctx, w.s.eng.rebind(journalSQL), key, v)
	}
	if err != nil {
		w.s.log.Warn("subagent context writer journal not updated", "key", key, "error", err)
	}
}

// journalCloseWait bounds Close's journal write: a store that cannot take
// it in that time keeps the "running" value, which health reports.
const journalCloseWait = 500 * time.Millisecond

// journalSQL sets one kandev_meta key.
const journalSQL = `INSERT INTO kandev_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`

// ensureSessionSQL inserts a task_sessions row when absent.
const ensureSessionSQL = `INSERT INTO task_sessions (id, task_id) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`

// writeBatch writes b atomically: its sessions, its journal key and its
// cards (with their texts), within the store's write timeout.
func (s *Store) writeBatch(ctx context.Context, b batch) error {
	ctx, cancel := context.WithTimeout(ctx, s.writeTimeout)
	defer cancel()
	if s.hooks.batch != nil {
		if err := s.hooks.batch(ctx); err != nil {
			return err
		}
	}
	var stmts []batchStatement
	for id, task := range b.sessions {
		stmts = append(stmts, batchStatement{s.eng.rebind(ensureSessionSQL), []any{id, task}})
	}
	if b.journal != "" {
		stmts = append(stmts, batchStatement{s.eng.rebind(journalSQL), []any{b.journal, "running since " + keyText(time.Now())}})
	}
	// In the order of the merged cards' key: two writers whose batches
	// share cards (two executions of one session) lock those cards (the
	// merged cards' triggers) in one order, so neither waits for the other
	// in a cycle (a deadlock, on PostgreSQL).
	entries := slices.SortedFunc(slices.Values(b.entries), func(x, y *queued) int {
		return cmp.Or(strings.Compare(x.r.sessionID, y.r.sessionID), strings.Compare(x.r.toolCallID, y.r.toolCallID),
			strings.Compare(x.r.executionID, y.r.executionID))
	})
	for _, q := range entries {
		args := s.upsertArgs(q.r)
		switch {
		case !s.writesTexts(q.r):
			stmts = append(stmts, batchStatement{s.upsertSQL, args})
		case s.eng.writableCTEs():
			stmts = append(stmts, batchStatement{s.textsSQL, append(args, textArgs(q.r)...)})
		default:
			stmts = append(stmts, batchStatement{s.upsertSQL, args},
				batchStatement{s.textsSQL, append(textArgs(q.r), q.r.sessionID, q.r.executionID, q.r.toolCallID)})
		}
		if st, ok := s.factsStatement(q.r); ok {
			stmts = append(stmts, st)
		}
	}
	stmts = append(stmts, s.traceStatements(b)...)
	return s.eng.execBatch(ctx, s.writer, stmts)
}

// batchStatement is one statement of a batch with its arguments.
type batchStatement struct {
	sql  string
	args []any
}

// execTx runs stmts in one transaction on db (SQLite: BEGIN IMMEDIATE).
func execTx(ctx context.Context, db *sql.DB, stmts []batchStatement) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	prepared := map[string]*sql.Stmt{}
	for _, st := range stmts {
		p, ok := prepared[st.sql]
		if !ok {
			if p, err = tx.PrepareContext(ctx, st.sql); err != nil {
				return err
			}
			defer p.Close()
			prepared[st.sql] = p
		}
		if _, err := p.ExecContext(ctx, st.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (sqliteEngine) execBatch(ctx context.Context, db *sql.DB, stmts []batchStatement) error {
	return execTx(ctx, db, stmts)
}

// execBatch sends stmts in one pipelined round trip (pgx's batch), which
// the server runs as one implicit transaction: all or nothing.
func (postgresEngine) execBatch(ctx context.Context, db *sql.DB, stmts []batchStatement) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("persistence: unexpected PostgreSQL driver connection %T", dc)
		}
		var b pgx.Batch
		for _, st := range stmts {
			b.Queue(st.sql, st.args...)
		}
		return c.Conn().SendBatch(ctx, &b).Close()
	})
}

// readWriterJournals returns the writer journal keys present (the writer's
// name → its value).
func readWriterJournals(ctx context.Context, q queryer, e engine) (map[string]string, error) {
	keys, err := queryKeys(ctx, q, e.rebind(`SELECT key, value FROM kandev_meta WHERE key LIKE ? ESCAPE '\'`),
		likeEscape(WriterJournalPrefix)+"%")
	out := map[string]string{}
	for k, v := range keys {
		out[strings.TrimPrefix(k, WriterJournalPrefix)] = v
	}
	return out, err
}
