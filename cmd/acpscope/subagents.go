package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// cmdSubagents implements `acpscope subagents --session ID [--db DSN]`:
// the session's cards, one per tool call however many agent executions
// (runs, a --resume's included) stored a row of it.
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
	rows, err := s.ListCards(ctx, *session)
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
