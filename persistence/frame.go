package persistence

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Frame is one observation of a subagent on an agent's tool-call stream, in
// the shape this package stores. Field names follow the normalised
// subagent_task payload keys; the command maps adapter events onto it.
//
// Zero values mean "not reported": "" for text, 0 for TotalTokens and
// DurationMs, nil for ToolUseCount (whose non-nil 0 is a reported zero).
// Prompt and ResultText are stored only by a store opened with
// WithSubagentText; the payload keys title, output_file and
// can_read_output_file are not stored and so have no field here.
type Frame struct {
	// TaskSessionID, TaskID and ToolCallID are the identity; a frame with
	// any of them "" is skipped, never stored.
	TaskSessionID string
	TaskID        string
	ToolCallID    string
	// ExecutionID is the agent execution that emitted the frame; "" is
	// stored as the 'unknown' sentinel.
	ExecutionID string
	// TurnID is the turn the frame arrived in; the first non-empty one
	// sticks: a later frame of the same card never moves the row to another turn.
	TurnID string
	// ParentToolCallID is the launching tool call of a nested subagent.
	ParentToolCallID string
	// ToolStatus is the ACP tool status; a value in TerminalToolStatuses
	// settles the row.
	ToolStatus string

	Description    string
	SubagentType   string
	Status         string // the agent's own status word, stored as agent_status
	AgentID        string
	Model          string
	ChildSessionID string
	DurationMs     int64
	TotalTokens    int64
	ToolUseCount   *int
	IsAsync        bool

	// Prompt is the instruction handed to the subagent. Stored only with
	// WithSubagentText (in task_session_subagent_texts, cut at
	// MaxSubagentText); a later non-empty prompt replaces the stored one,
	// "" never erases it.
	Prompt string
	// ResultText is the subagent's answer, stored and merged as Prompt.
	ResultText string
	// PromptBytes and ResultBytes are the texts' full lengths in bytes
	// when Prompt or ResultText is already a cut prefix (the producer
	// capped it, as the adapters do); 0 means the text is whole. The
	// stored length (SubagentTexts) is the larger of it and the text's
	// own, so a text cut before the store is still read as truncated.
	PromptBytes int64
	ResultBytes int64

	// Facts are the card's facts without a column in
	// task_session_subagents (failure reason, earlier answers, the parent
	// card's session). Stored only with WithCardFacts, in
	// task_session_subagent_facts; nil or zero facts store nothing.
	Facts *CardFacts

	// ObservedAt is when the orchestrator first recognised this frame as a
	// subagent (not when the subagent started); zero means now.
	ObservedAt time.Time
}

// TerminalToolStatuses is the exact, case-sensitive set of tool statuses
// that settle a row. Callers that classify tool statuses themselves should
// use it (or pin their own set equal to it in a test).
var TerminalToolStatuses = []string{"complete", "completed", "success", "error", "failed", "cancelled"}

// IsTerminalToolStatus reports whether status settles a row.
func IsTerminalToolStatus(status string) bool { return slices.Contains(TerminalToolStatuses, status) }

// UnknownExecution is the agent_execution_id stored when a frame or a
// backfilled message carries no execution identity.
const UnknownExecution = "unknown"

// Source values of a row.
const (
	SourceLive     = "live"
	SourceBackfill = "backfill"
)

// SubagentContext is one stored row of task_session_subagents.
type SubagentContext struct {
	ID               string
	TaskSessionID    string
	TaskID           string
	TurnID           *string
	ToolCallID       string
	AgentExecutionID string
	ParentToolCallID *string
	SubagentType     *string
	Description      *string
	AgentID          *string
	ChildSessionID   *string
	Model            *string
	AgentStatus      *string
	ToolStatus       *string
	IsAsync          bool
	TotalTokens      *int64
	ToolUseCount     *int64
	DurationMs       *int64
	// Source is SourceLive or SourceBackfill; backfilled rows hold only what
	// survived in message metadata.
	Source string
	// ObservedAt is the orchestrator's first recognition, never a start time.
	ObservedAt time.Time
	SettledAt  *time.Time
	UpdatedAt  time.Time
}

// row is a frame after normalisation: exactly the values bound into the
// upsert. It is built once, by normalise, for every write path.
type row struct {
	id, sessionID, taskID, toolCallID, executionID string
	turnID, parentToolCallID                       *string
	subagentType, description, agentID             *string
	childSessionID, model, agentStatus, toolStatus *string
	isAsync                                        int
	totalTokens, toolUseCount, durationMs          *int64
	observedAt                                     time.Time
	settledAt                                      *time.Time
	// updatedAt is the latest observation merged into the row: observedAt
	// for one frame, the later of the two after mergeRows.
	updatedAt time.Time
	anomalous bool
	// prompt and result are the capped texts, with their full lengths;
	// nil when not reported (written only with WithSubagentText).
	prompt, result           *string
	promptBytes, resultBytes *int64
	// The card's facts (facts.go), written only with WithCardFacts:
	// errorMessage (capped) and parentSessionID (an id, encoded) as
	// reported, earlierResults the JSON array of the capped earlier
	// answers, referencedBy the JSON array of the encoded referrers.
	errorMessage, earlierResults, parentSessionID, referencedBy *string
}

// normalise applies every field rule that must hold before SQL (docs/persistence.md#normalisation-before-sql):
// "" → NULL, non-positive tokens/duration → NULL, negative count → NULL,
// the execution sentinel, one now sample, UTC µs, settled_at from the
// terminal set. It never mutates f.
func normalise(f *Frame, now func() time.Time) row {
	r := row{
		id:               newUUID(),
		sessionID:        encodeID(f.TaskSessionID),
		taskID:           encodeID(f.TaskID),
		toolCallID:       encodeID(f.ToolCallID),
		executionID:      encodeID(f.ExecutionID),
		turnID:           nonEmptyID(f.TurnID),
		parentToolCallID: nonEmptyID(f.ParentToolCallID),
		subagentType:     nonEmpty(f.SubagentType),
		description:      nonEmpty(f.Description),
		agentID:          nonEmpty(f.AgentID),
		childSessionID:   nonEmptyID(f.ChildSessionID),
		model:            nonEmpty(f.Model),
		agentStatus:      nonEmpty(f.Status),
		toolStatus:       nonEmpty(f.ToolStatus),
	}
	if r.executionID == "" {
		r.executionID = UnknownExecution
	}
	r.prompt, r.promptBytes = capText(f.Prompt, MaxSubagentText)
	r.result, r.resultBytes = capText(f.ResultText, MaxSubagentText)
	fullLength(r.promptBytes, f.PromptBytes)
	fullLength(r.resultBytes, f.ResultBytes)
	if f.IsAsync {
		r.isAsync = 1
	}
	r.totalTokens, r.anomalous = positive(f.TotalTokens, r.anomalous)
	r.durationMs, r.anomalous = positive(f.DurationMs, r.anomalous)
	if f.ToolUseCount != nil {
		if n := int64(*f.ToolUseCount); n >= 0 {
			r.toolUseCount = &n
		} else {
			r.anomalous = true
		}
	}
	if f.Facts != nil {
		r.setFacts(*f.Facts)
	}
	r.observedAt = f.ObservedAt
	if r.observedAt.IsZero() {
		r.observedAt = now()
	}
	r.observedAt = normTime(r.observedAt)
	r.updatedAt = r.observedAt
	if IsTerminalToolStatus(f.ToolStatus) {
		t := r.observedAt
		r.settledAt = &t
	}
	return r
}

// mergeRows is the one merge rule, in Go, of two normalised frames of one
// card, older first: upserting the result has the same effect on any
// stored row (or none) as upserting older and then newer. It mirrors the
// conflict clause of upsertSQL column by column, and the texts merge of
// textsMerge (TestWriterMergeMatchesUpsert proves the equality on both
// engines). A field added to Frame gets its line here and in the SQL.
func mergeRows(older, newer row) row {
	m := older // id, identity, source and observed_at: write-once
	m.turnID = firstSet(older.turnID, newer.turnID)
	m.parentToolCallID = firstSet(newer.parentToolCallID, older.parentToolCallID)
	m.subagentType = firstSet(newer.subagentType, older.subagentType)
	m.description = firstSet(newer.description, older.description)
	m.agentID = firstSet(newer.agentID, older.agentID)
	m.childSessionID = firstSet(newer.childSessionID, older.childSessionID)
	m.model = firstSet(newer.model, older.model)
	m.agentStatus = firstSet(newer.agentStatus, older.agentStatus)
	if older.settledAt == nil { // a settled status is frozen
		m.toolStatus = firstSet(newer.toolStatus, older.toolStatus)
	}
	m.settledAt = firstSet(older.settledAt, newer.settledAt)
	m.isAsync = max(older.isAsync, newer.isAsync)
	m.totalTokens = firstSet(newer.totalTokens, older.totalTokens)
	m.toolUseCount = firstSet(newer.toolUseCount, older.toolUseCount)
	m.durationMs = firstSet(newer.durationMs, older.durationMs)
	if newer.updatedAt.After(older.updatedAt) {
		m.updatedAt = newer.updatedAt
	}
	if newer.prompt != nil {
		m.prompt, m.promptBytes = newer.prompt, newer.promptBytes
	}
	if newer.result != nil {
		m.result, m.resultBytes = newer.result, newer.resultBytes
	}
	m.anomalous = older.anomalous || newer.anomalous
	m.errorMessage = firstSet(newer.errorMessage, older.errorMessage)
	m.parentSessionID = firstSet(newer.parentSessionID, older.parentSessionID)
	m.earlierResults = longerList(older.earlierResults, newer.earlierResults)
	m.referencedBy = longerList(older.referencedBy, newer.referencedBy)
	return m
}

// firstSet is a when set, else b: SQL's COALESCE(a, b).
func firstSet[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	s = cleanText(s)
	return &s
}

// nonEmptyID is an optional id as stored: nil for "", else encodeID.
func nonEmptyID(s string) *string {
	if s == "" {
		return nil
	}
	s = encodeID(s)
	return &s
}

// Ids are opaque: any Go string (a JSON string an agent sent, NUL
// included) is an id, and two ids that differ are two ids. PostgreSQL text
// holds neither NUL nor invalid UTF-8, so an id is stored through one
// encoding on both engines, used for every id column (session, task,
// tool call, execution, turn, parent tool call, child session) and every
// id a read binds: the id itself when it is valid UTF-8 without NUL and
// does not begin with idMark (every id a well-behaved agent sends, stored
// as before); otherwise idMark followed by the id with NUL, '%' and each
// byte of invalid UTF-8 written %XX. The encoding is injective and
// decodeID inverts it, so the session row, the card rows and the texts
// agree, and a read returns the id it was given.
const idMark = "\uFFFF" // a Unicode noncharacter: reserved for internal use

// encodeID is id as stored.
func encodeID(id string) string {
	if utf8.ValidString(id) && !strings.Contains(id, "\x00") && !strings.HasPrefix(id, idMark) {
		return id
	}
	var b strings.Builder
	b.WriteString(idMark)
	for i := 0; i < len(id); {
		r, size := utf8.DecodeRuneInString(id[i:])
		switch {
		case r == 0 || r == '%' || (r == utf8.RuneError && size == 1):
			fmt.Fprintf(&b, "%%%02X", id[i])
		default:
			b.WriteString(id[i : i+size])
		}
		i += size
	}
	return b.String()
}

// decodeID is the id a stored value encodes (encodeID's inverse); a value
// not written by encodeID is returned as it is.
func decodeID(stored string) string {
	rest, ok := strings.CutPrefix(stored, idMark)
	if !ok {
		return stored
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		if rest[i] == '%' && i+2 < len(rest) && isHex(rest[i+1]) && isHex(rest[i+2]) {
			b.WriteByte(unhex(rest[i+1])<<4 | unhex(rest[i+2]))
			i += 2
			continue
		}
		b.WriteByte(rest[i])
	}
	return b.String()
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// decodeIDPtr is decodeID of an optional id.
func decodeIDPtr(p *string) *string {
	if p == nil {
		return nil
	}
	d := decodeID(*p)
	return &d
}

// cleanText makes agent text storable identically on both engines:
// PostgreSQL text holds neither NUL nor invalid UTF-8, so both become
// U+FFFD (on SQLite too, so the engines agree). Valid text is unchanged.
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// positive keeps v when > 0; 0 is "not reported" and a negative value is an
// anomaly; both become NULL.
func positive(v int64, anomalous bool) (*int64, bool) {
	switch {
	case v > 0:
		return &v, anomalous
	case v < 0:
		return nil, true
	}
	return nil, anomalous
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
