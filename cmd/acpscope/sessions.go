package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
)

// cmdSessions implements `acpscope sessions [--db DSN] [--agent NAME]
// [--text TEXT] [--limit N] [--json]`: the recent sessions of the store,
// most recent first.
func cmdSessions(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("sessions", e.stderr)
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	agent := fs.String("agent", "", "only sessions of this agent dialect (cursor, claude, …)")
	text := fs.String("text", "", "only sessions whose id or a card's id, description, type, model or status contains this text")
	limit := fs.Int("limit", 20, "at most this many sessions")
	asJSON := fs.Bool("json", false, "one JSON object per line per session")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sessions takes no arguments")
	}
	if *limit <= 0 {
		return fmt.Errorf("--limit must be positive")
	}
	s, err := openStoreReadOnly(ctx, *dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	rows, err := web.ListSessions(ctx, s, web.Query{Agent: *agent, Text: *text, Limit: *limit})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeSessionsJSON(e.stdout, rows)
	}
	writeSessions(e.stdout, rows)
	return nil
}

// writeSessionsJSON prints one JSON object per session, its forbidden
// runes escaped by the shared sanitiser.
func writeSessionsJSON(w io.Writer, rows []web.SessionRow) error {
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(safetext.JSON(line), '\n')); err != nil {
			return err
		}
	}
	return nil
}

// writeSessions prints the sessions as a table. Stored text is the agent's:
// it passes the shared sanitiser, so no control or bidi character reaches
// the terminal. OBSERVED is "whole", or "incomplete(N)" when N lines of the
// session's connection went by unobserved.
func writeSessions(w io.Writer, rows []web.SessionRow) {
	writeTable(w, rows, "no sessions stored", "SESSION\tAGENT\tSTARTED\tTURNS\tCARDS\tSTATUS\tOBSERVED", func(r web.SessionRow) string {
		started := "-"
		if r.Started != nil {
			started = r.Started.Format(time.RFC3339)
		}
		agent := r.Agent
		if agent == "" {
			agent = "-"
		}
		observed := "whole"
		if r.ObservationIncomplete {
			observed = fmt.Sprintf("incomplete(%d)", r.Unobserved)
		}
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%s\t%s", safetext.Text(r.ID), safetext.Text(agent), started, r.Turns, r.Cards, r.Status, observed)
	})
}
