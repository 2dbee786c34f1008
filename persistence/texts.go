package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Subagent texts (opt-in, WithSubagentText): the prompt handed to a
// subagent and the text it answered can be large and are often sensitive,
// so a store keeps them only when asked, in a table of its own beside
// task_session_subagents: one row per card, referencing the card's id and
// deleted with it. No column is added to task_session_subagents or to any
// host table (docs/persistence.md#texts).

// textsTable is the table the texts step creates and owns.
const textsTable = "task_session_subagent_texts"

// MaxSubagentText is the most bytes stored of one prompt or one result
// text (1 MiB). A longer text is cut at the last UTF-8 character boundary
// at or below it; its full length is kept beside it (SubagentTexts).
const MaxSubagentText = 1 << 20

// WithSubagentText makes the store keep each card's prompt and result text
// (Frame.Prompt, Frame.ResultText) in its own table,
// task_session_subagent_texts, which the migration step StepTexts creates.
// Without it (the default) the table is neither created nor written, even
// when another store created it. Reading (Store.SubagentTexts) needs no
// option: it reads the table when the database has it.
func WithSubagentText() Option { return func(s *Store) { s.texts = true } }

// ErrNoTextStore is returned (wrapped) by SubagentTexts when the database
// keeps no subagent texts: the table is absent (made by a store without
// WithSubagentText) or is not the one this package creates.
var ErrNoTextStore = errors.New("persistence: this database keeps no subagent prompts or result texts")

// SubagentTexts is the prompt and result text stored for one card. A nil
// text was never reported (or the card has no texts row).
type SubagentTexts struct {
	Prompt *string
	// PromptBytes is the prompt's full length in bytes, as received (after
	// invalid UTF-8 and NUL became U+FFFD); more than len(*Prompt) when the
	// stored text was cut at MaxSubagentText.
	PromptBytes int64
	ResultText  *string
	// ResultBytes is the result text's full length, as PromptBytes.
	ResultBytes int64
}

// PromptTruncated reports whether the stored prompt is a cut prefix.
func (t SubagentTexts) PromptTruncated() bool {
	return t.Prompt != nil && int64(len(*t.Prompt)) < t.PromptBytes
}

// ResultTruncated reports whether the stored result text is a cut prefix.
func (t SubagentTexts) ResultTruncated() bool {
	return t.ResultText != nil && int64(len(*t.ResultText)) < t.ResultBytes
}

// textsColumns are the columns of the texts table, in order.
var textsColumns = []string{"subagent_id", "prompt", "prompt_bytes", "result_text", "result_bytes"}

// textsDDL creates the texts table. The primary key is the foreign key:
// one row per card, found by the card's id, deleted with the card (and so
// with its session).
func textsDDL(e engine) string {
	m := e.metricType()
	return `CREATE TABLE IF NOT EXISTS ` + textsTable + ` (
	subagent_id  TEXT NOT NULL PRIMARY KEY REFERENCES task_session_subagents(id) ON DELETE CASCADE,
	prompt       TEXT,
	prompt_bytes ` + m + `,
	result_text  TEXT,
	result_bytes ` + m + `
)`
}

// probeTexts reports whether the texts table exists and, when it exists
// without every column of the layer's shape, a refusal saying it is not
// the layer's: no step may touch it, and no texts are written to or read
// from it. err is a failed catalog read.
func (s *Store) probeTexts(ctx context.Context, q queryer) (exists bool, foreign, err error) {
	var missing []string
	for _, c := range textsColumns {
		has, err := s.eng.hasColumn(ctx, q, textsTable, c)
		if err != nil {
			return false, nil, err
		}
		if !has {
			missing = append(missing, c)
		}
	}
	switch {
	case len(missing) == 0:
		return true, nil, nil
	case len(missing) < len(textsColumns):
		return true, foreignTexts(missing), nil
	}
	has, err := s.eng.hasRelation(ctx, q, textsTable)
	if err != nil || !has {
		return false, nil, err
	}
	return true, foreignTexts(missing), nil
}

func foreignTexts(missing []string) error {
	return fmt.Errorf("table %s exists but this layer did not create it (no column %s); "+
		"no DDL run on it and no texts stored: rename it, or keep the subagent contexts in another database or schema",
		textsTable, strings.Join(missing, ", "))
}

// planTexts is the texts step: the table when absent; a table of that name
// the layer did not create is refused (refusal), and nothing runs.
func (s *Store) planTexts(ctx context.Context, q queryer) (ddl []string, refusal, err error) {
	exists, foreign, err := s.probeTexts(ctx, q)
	if err != nil || exists {
		return nil, foreign, err
	}
	return []string{textsDDL(s.eng)}, nil, nil
}

// capText is the stored form of one text and its full length: nil for "",
// else the text made storable (cleanText) and cut, when longer than limit
// bytes, at the last character boundary at or below it.
func capText(s string, limit int) (*string, *int64) {
	if s == "" {
		return nil, nil
	}
	s = cleanText(s)
	n := int64(len(s))
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return &s, &n
}

// fullLength raises the stored length n of a text to full, the length
// its producer reported before cutting it (nil n: no text, nothing kept).
func fullLength(n *int64, full int64) {
	if n != nil && full > *n {
		*n = full
	}
}

// textsMerge merges one frame's texts, from the one row of source (the
// card's id and the four text values), into the card's texts row. A text
// the frame lacks (NULL) keeps the stored one and its length. A frame that
// repeats the stored texts (adapters repeat the prompt on every update)
// updates nothing, so the row is not rewritten.
func textsMerge(source string) string {
	const t = textsTable
	changed := func(text, bytes string) string {
		return `(excluded.` + text + ` IS NOT NULL AND (` + t + `.` + text + ` IS NULL OR ` + t + `.` + text + ` <> excluded.` + text +
			` OR ` + t + `.` + bytes + ` <> excluded.` + bytes + `))`
	}
	return `INSERT INTO ` + t + ` (subagent_id, prompt, prompt_bytes, result_text, result_bytes)
` + source + `
ON CONFLICT (subagent_id) DO UPDATE SET
	prompt       = COALESCE(excluded.prompt, ` + t + `.prompt),
	prompt_bytes = CASE WHEN excluded.prompt IS NULL THEN ` + t + `.prompt_bytes ELSE excluded.prompt_bytes END,
	result_text  = COALESCE(excluded.result_text, ` + t + `.result_text),
	result_bytes = CASE WHEN excluded.result_text IS NULL THEN ` + t + `.result_bytes ELSE excluded.result_bytes END
WHERE ` + changed("prompt", "prompt_bytes") + ` OR ` + changed("result_text", "result_bytes")
}

// textValues selects the card's id and the four text values.
const textValues = `SELECT id, CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT)`

// textsSQL is the texts merge as a statement of its own, run after the
// row's upsert in one transaction: it finds the card by its key.
func textsSQL(e engine) string {
	return e.rebind(textsMerge(textValues + `
FROM task_session_subagents
WHERE task_session_id = ? AND agent_execution_id = ? AND tool_call_id = ?`))
}

// upsertTextsSQL is, for an engine with data-modifying CTEs, the row's
// upsert and the texts merge in one statement (one round trip, atomic):
// the upsert returns the card's id, inserted or updated, and the merge
// reads it.
func upsertTextsSQL(e engine) string {
	return e.rebind(`WITH card AS (
` + upsertSQL(e) + `
RETURNING id
)
` + textsMerge(textValues+` FROM card`))
}

// writeWithTexts is write for a frame that carries a text, on a store
// whose texts table is in place: the row upsert and the texts merge in one
// statement (writableCTEs) or one transaction, so a card's texts never
// outlive or precede its row.
func (s *Store) writeWithTexts(ctx context.Context, args []any, r row) error {
	texts := textArgs(r)
	if s.eng.writableCTEs() {
		return s.execPrepared(ctx, &s.textsStmt, s.textsSQL, append(args, texts...)...)
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	exec := func(slot *atomic.Pointer[sql.Stmt], q string, args ...any) error {
		var err error
		if st := slot.Load(); st != nil {
			_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, q, args...)
		}
		return err
	}
	if err := exec(&s.upsertStmt, s.upsertSQL, args...); err != nil {
		return err
	}
	if err := exec(&s.textsStmt, s.textsSQL, append(texts, r.sessionID, r.executionID, r.toolCallID)...); err != nil {
		return fmt.Errorf("subagent texts: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.prepare(ctx, &s.upsertStmt, s.upsertSQL)
	s.prepare(ctx, &s.textsStmt, s.textsSQL)
	return nil
}

// SubagentTexts returns the texts stored for the card with the given key
// (the execution id as stored: UnknownExecution for a frame that had
// none). A card without texts, or no such card, gives the zero value. A
// database without the texts table gives an error wrapping ErrNoTextStore.
func (s *Store) SubagentTexts(ctx context.Context, sessionID, executionID, toolCallID string) (SubagentTexts, error) {
	var out SubagentTexts
	if !s.textsFound.Load() {
		exists, foreign, err := s.probeTexts(ctx, s.reader)
		switch {
		case err != nil:
			return out, err
		case foreign != nil:
			return out, fmt.Errorf("%w: %v", ErrNoTextStore, foreign)
		case !exists:
			return out, ErrNoTextStore
		}
		s.textsFound.Store(true)
	}
	q := s.eng.rebind(`SELECT t.prompt, t.prompt_bytes, t.result_text, t.result_bytes
FROM task_session_subagents c JOIN ` + textsTable + ` t ON t.subagent_id = c.id
WHERE c.task_session_id = ? AND c.agent_execution_id = ? AND c.tool_call_id = ?`)
	var prompt, result sql.NullString
	var pn, rn sql.NullInt64
	err := s.reader.QueryRowContext(ctx, q, encodeID(sessionID), encodeID(executionID), encodeID(toolCallID)).Scan(&prompt, &pn, &result, &rn)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Prompt, out.ResultText = strPtr(prompt), strPtr(result)
	out.PromptBytes, out.ResultBytes = pn.Int64, rn.Int64
	return out, nil
}
