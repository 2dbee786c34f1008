package web

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// SessionRow is one session as `acpscope sessions --json` prints it and the
// sessions page shows it.
type SessionRow struct {
	ID string `json:"id"`
	// Agent is the dialect recorded in the session's execution ids
	// (AgentOf); "" when none is recorded.
	Agent string `json:"agent"`
	// Started is the session's start, or its first card's observation; nil
	// when neither is known.
	Started    *time.Time `json:"started"`
	LastUpdate *time.Time `json:"last_update"`
	Turns      int        `json:"turns"`
	Cards      int        `json:"cards"`
	Open       int        `json:"open"`
	Failed     int        `json:"failed"`
	Cancelled  int        `json:"cancelled"`
	// Unknown counts the cards the agent stopped tracking.
	Unknown int `json:"unknown"`
	// Status is persistence's derived session status: empty, open, error,
	// cancelled, unknown or complete.
	Status string `json:"status"`
	// ChildSessions are the subagent sessions its cards launched.
	ChildSessions []string `json:"child_sessions"`
	// ObservationIncomplete reports that lines of its connection went by
	// unobserved (the tap's observer fell behind, or a line was over its
	// limit): its cards may miss what they said. Unobserved is how many.
	ObservationIncomplete bool  `json:"observation_incomplete"`
	Unobserved            int64 `json:"unobserved"`
}

// Query selects sessions: by agent dialect and by text (see
// persistence.SessionFilter).
type Query struct {
	Agent string
	Text  string
	Limit int
}

// ListSessions reads the sessions q selects, most recent first.
func ListSessions(ctx context.Context, s *persistence.Store, q Query) ([]SessionRow, error) {
	f := persistence.SessionFilter{Text: q.Text, Limit: q.Limit}
	if q.Agent != "" {
		f.ExecutionPrefix = ExecutionPrefix(q.Agent)
	}
	sums, err := s.ListSessions(ctx, f)
	if err != nil {
		return nil, err
	}
	rows := make([]SessionRow, len(sums))
	for i, m := range sums {
		rows[i] = rowOf(m)
	}
	return rows, nil
}

func rowOf(m persistence.SessionSummary) SessionRow {
	children := m.ChildSessions
	if children == nil {
		children = []string{}
	}
	return SessionRow{
		ID: m.ID, Agent: AgentOfAll(m.Executions), Started: timePtr(m.StartedAt), LastUpdate: timePtr(m.LastUpdate),
		Turns: m.Turns, Cards: m.Cards, Open: m.Open, Failed: m.Failed, Cancelled: m.Cancelled, Unknown: m.Unknown,
		Status: m.Status, ChildSessions: children, ObservationIncomplete: m.ObservationIncomplete, Unobserved: m.Unobserved,
	}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// CardTexts is one card's prompt and result text, and its facts, as
// /api/card serves them.
type CardTexts struct {
	// Stored is false when the store keeps no texts (it was written without
	// persistence.WithSubagentText, e.g. by an older acpscope or a host);
	// the other fields are then empty.
	Stored bool `json:"stored"`
	// Prompt and ResultText are nil when the card has none stored.
	Prompt     *string `json:"prompt"`
	ResultText *string `json:"result_text"`
	// PromptBytes and ResultBytes are the full lengths; a text longer than
	// persistence.MaxSubagentText was cut (PromptTruncated, ResultTruncated).
	PromptBytes     int64 `json:"prompt_bytes"`
	ResultBytes     int64 `json:"result_bytes"`
	PromptTruncated bool  `json:"prompt_truncated"`
	ResultTruncated bool  `json:"result_truncated"`
	// Facts are the card's facts (persistence.Store.SubagentFacts).
	Facts CardFactTexts `json:"facts"`
}

// MaxEarlierResults bounds the earlier answers /api/card serves of one
// card (the latest ones); together they are at most
// persistence.MaxSubagentText bytes, as one stored text is.
const MaxEarlierResults = 100

// CardFactTexts are a card's facts as /api/card serves them, agent text
// sanitised by safetext.Lines.
type CardFactTexts struct {
	// Stored is false when the store keeps no card facts (it was written
	// without persistence.WithCardFacts); the other fields are then empty.
	Stored bool `json:"stored"`
	// ErrorMessage is the failure's reason (nil when none is stored).
	ErrorMessage *string `json:"error_message"`
	// EarlierResults are the child's answers before its latest (the
	// result text), oldest first: the last of them, within
	// MaxEarlierResults answers and persistence.MaxSubagentText bytes (an
	// answer that does not fit whole is cut, then no older one is served).
	EarlierResults []string `json:"earlier_results"`
	// EarlierCount is how many earlier answers are stored; the first
	// EarlierCount-len(EarlierResults) of them are not served.
	EarlierCount int `json:"earlier_count"`
	// EarlierTruncated: the oldest answer served was cut.
	EarlierTruncated bool `json:"earlier_truncated"`
	// ReferencedBy are the tool calls referencing the card's child session
	// (persistence.CardFacts.ReferencedBy), sanitised by safetext.Text.
	ReferencedBy []string `json:"referenced_by"`
}

// LoadCardTexts reads the texts and the facts of the card with the given
// key.
func LoadCardTexts(ctx context.Context, s *persistence.Store, session, execution, call string) (CardTexts, error) {
	var out CardTexts
	t, err := s.SubagentTexts(ctx, session, execution, call)
	switch {
	case errors.Is(err, persistence.ErrNoTextStore):
	case err != nil:
		return CardTexts{}, err
	default:
		out = CardTexts{Stored: true, Prompt: safeLines(t.Prompt), ResultText: safeLines(t.ResultText),
			PromptBytes: t.PromptBytes, ResultBytes: t.ResultBytes,
			PromptTruncated: t.PromptTruncated(), ResultTruncated: t.ResultTruncated()}
	}
	f, err := s.SubagentFacts(ctx, session, execution, call)
	switch {
	case errors.Is(err, persistence.ErrNoFactStore):
	case err != nil:
		return CardTexts{}, err
	default:
		out.Facts = factTexts(f)
	}
	return out, nil
}

// factTexts is the served form of stored facts: sanitised, and the
// earlier answers bounded (CardFactTexts.EarlierResults).
func factTexts(f persistence.CardFacts) CardFactTexts {
	out := CardFactTexts{Stored: true, EarlierResults: []string{}, EarlierCount: len(f.EarlierResults),
		ReferencedBy: safeTexts(f.ReferencedBy)}
	if out.ReferencedBy == nil {
		out.ReferencedBy = []string{}
	}
	if f.ErrorMessage != "" {
		m := safetext.Lines(f.ErrorMessage)
		out.ErrorMessage = &m
	}
	budget := persistence.MaxSubagentText
	first := len(f.EarlierResults)
	for first > 0 && len(f.EarlierResults)-first < MaxEarlierResults && budget > 0 {
		first--
		budget -= len(f.EarlierResults[first])
	}
	for i := first; i < len(f.EarlierResults); i++ {
		text := f.EarlierResults[i]
		if i == first && budget < 0 {
			text, out.EarlierTruncated = cutText(text, len(text)+budget), true
		}
		out.EarlierResults = append(out.EarlierResults, safetext.Lines(text))
	}
	return out
}

// cutText is s cut to at most n bytes at a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// safeLines is *text sanitised by safetext.Lines (nil stays nil).
func safeLines(text *string) *string {
	if text == nil {
		return nil
	}
	s := safetext.Lines(*text)
	return &s
}
