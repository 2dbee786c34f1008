package web

import (
	"context"
	"errors"
	"time"

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
	// Status is persistence's derived session status: empty, open, error,
	// cancelled or complete.
	Status string `json:"status"`
	// ChildSessions are the subagent sessions its cards launched.
	ChildSessions []string `json:"child_sessions"`
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
		Turns: m.Turns, Cards: m.Cards, Open: m.Open, Failed: m.Failed, Cancelled: m.Cancelled,
		Status: m.Status, ChildSessions: children,
	}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// CardTexts is one card's prompt and result text as /api/card serves them.
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
}

// LoadCardTexts reads the texts of the card with the given key.
func LoadCardTexts(ctx context.Context, s *persistence.Store, session, execution, call string) (CardTexts, error) {
	t, err := s.SubagentTexts(ctx, session, execution, call)
	if errors.Is(err, persistence.ErrNoTextStore) {
		return CardTexts{}, nil
	}
	if err != nil {
		return CardTexts{}, err
	}
	return CardTexts{Stored: true, Prompt: t.Prompt, ResultText: t.ResultText,
		PromptBytes: t.PromptBytes, ResultBytes: t.ResultBytes,
		PromptTruncated: t.PromptTruncated(), ResultTruncated: t.ResultTruncated()}, nil
}
