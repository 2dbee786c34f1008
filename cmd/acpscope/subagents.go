package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// cmdSubagents implements `acpscope subagents --session ID [--db DSN]
// [--json]`: the session's cards, one per tool call however many agent
// executions (runs, a --resume's included) stored a row of it, each with
// its result.
func cmdSubagents(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("subagents", e.stderr)
	session := fs.String("session", "", "the session whose subagent contexts to list (required)")
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	asJSON := fs.Bool("json", false, "one JSON object per line per card, with its whole stored result")
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
	rows, err := s.ListCards(ctx, *session)
	if err != nil {
		return err
	}
	cards, err := readResults(ctx, s, rows)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeSubagentsJSON(e.stdout, cards)
	}
	writeContexts(e.stdout, cards)
	return nil
}

// subagentCard is one card as `subagents` prints it: its stored row, and
// its result and failure reason when the store keeps them.
type subagentCard struct {
	persistence.SubagentContext
	result       *string
	resultBytes  int64
	truncated    bool
	errorMessage *string
}

// readResults reads each card's result text (persistence.WithSubagentText)
// and failure reason (persistence.WithCardFacts), from the row of the
// execution the card is collapsed to; a store without them gives none.
func readResults(ctx context.Context, s *persistence.Store, rows []persistence.SubagentContext) ([]subagentCard, error) {
	cards := make([]subagentCard, len(rows))
	texts, facts := true, true
	for i, r := range rows {
		c := subagentCard{SubagentContext: r}
		if texts {
			t, err := s.SubagentTexts(ctx, r.TaskSessionID, r.AgentExecutionID, r.ToolCallID)
			switch {
			case errors.Is(err, persistence.ErrNoTextStore):
				texts = false
			case err != nil:
				return nil, err
			default:
				c.result, c.resultBytes, c.truncated = t.ResultText, t.ResultBytes, t.ResultTruncated()
			}
		}
		if facts {
			f, err := s.SubagentFacts(ctx, r.TaskSessionID, r.AgentExecutionID, r.ToolCallID)
			switch {
			case errors.Is(err, persistence.ErrNoFactStore):
				facts = false
			case err != nil:
				return nil, err
			case f.ErrorMessage != "":
				c.errorMessage = &f.ErrorMessage
			}
		}
		cards[i] = c
	}
	return cards, nil
}

// subagentJSON is one line of `subagents --json` (keys documented in the
// README). Text is the agent's, as stored: the forbidden runes are
// escaped by the shared sanitiser, so the values are unchanged.
type subagentJSON struct {
	SessionID        string     `json:"session_id"`
	ToolCallID       string     `json:"tool_call_id"`
	ParentToolCallID *string    `json:"parent_tool_call_id"`
	AgentExecutionID string     `json:"agent_execution_id"`
	TurnID           *string    `json:"turn_id"`
	SubagentType     *string    `json:"subagent_type"`
	Description      *string    `json:"description"`
	AgentID          *string    `json:"agent_id"`
	ChildSessionID   *string    `json:"child_session_id"`
	Model            *string    `json:"model"`
	AgentStatus      *string    `json:"agent_status"`
	ToolStatus       *string    `json:"tool_status"`
	IsAsync          bool       `json:"is_async"`
	TotalTokens      *int64     `json:"total_tokens"`
	ToolUseCount     *int64     `json:"tool_use_count"`
	DurationMs       *int64     `json:"duration_ms"`
	ObservedAt       time.Time  `json:"observed_at"`
	SettledAt        *time.Time `json:"settled_at"`
	ResultText       *string    `json:"result_text"`
	ResultBytes      int64      `json:"result_bytes"`
	ResultTruncated  bool       `json:"result_truncated"`
	ErrorMessage     *string    `json:"error_message"`
}

// writeSubagentsJSON prints one JSON object per card, in stored order.
func writeSubagentsJSON(w io.Writer, cards []subagentCard) error {
	for _, c := range cards {
		r := c.SubagentContext
		line, err := json.Marshal(subagentJSON{
			SessionID: r.TaskSessionID, ToolCallID: r.ToolCallID, ParentToolCallID: r.ParentToolCallID,
			AgentExecutionID: r.AgentExecutionID, TurnID: r.TurnID, SubagentType: r.SubagentType,
			Description: r.Description, AgentID: r.AgentID, ChildSessionID: r.ChildSessionID, Model: r.Model,
			AgentStatus: r.AgentStatus, ToolStatus: r.ToolStatus, IsAsync: r.IsAsync, TotalTokens: r.TotalTokens,
			ToolUseCount: r.ToolUseCount, DurationMs: r.DurationMs, ObservedAt: r.ObservedAt.UTC(), SettledAt: r.SettledAt,
			ResultText: c.result, ResultBytes: c.resultBytes, ResultTruncated: c.truncated, ErrorMessage: c.errorMessage,
		})
		if err != nil {
			return err
		}
		if _, err := w.Write(append(safetext.JSON(line), '\n')); err != nil {
			return err
		}
	}
	return nil
}

// writeContexts prints stored contexts as a table, in stored order. Every
// stored field passes the sanitiser: it came from an agent.
func writeContexts(w io.Writer, cards []subagentCard) {
	writeTable(w, cards, "no subagent contexts stored for this session",
		"OBSERVED\tTOOL CALL\tPARENT\tTYPE\tDESCRIPTION\tTOOL STATUS\tAGENT STATUS\tMODEL\tTOKENS\tTOOLS\tDURATION\tASYNC\tRESULT",
		func(c subagentCard) string {
			r := c.SubagentContext
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s",
				r.ObservedAt.UTC().Format(time.RFC3339), safetext.Text(r.ToolCallID), deref(r.ParentToolCallID), deref(r.SubagentType),
				deref(r.Description), deref(r.ToolStatus), deref(r.AgentStatus), deref(r.Model),
				num(r.TotalTokens), num(r.ToolUseCount), num(r.DurationMs), r.IsAsync, c.excerpt())
		})
}

// maxExcerpt is the most characters of a result the table shows.
const maxExcerpt = 60

// excerpt is the card's result for the table: its first non-blank line,
// at most maxExcerpt characters, sanitised ("…" when there is more); the
// failure reason ("error: …") when there is no result; "-" for neither.
func (c subagentCard) excerpt() string {
	text, prefix := c.result, ""
	if text == nil || strings.TrimSpace(*text) == "" {
		text, prefix = c.errorMessage, "error: "
	}
	if text == nil || strings.TrimSpace(*text) == "" {
		return "-"
	}
	t := strings.TrimSpace(*text)
	line, rest, more := strings.Cut(t, "\n")
	line = strings.TrimSpace(line)
	cut := more && strings.TrimSpace(rest) != ""
	if r := []rune(line); len(r) > maxExcerpt {
		line, cut = string(r[:maxExcerpt]), true
	}
	if cut || (c.truncated && prefix == "") {
		line += "…"
	}
	return prefix + safetext.Text(line)
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
