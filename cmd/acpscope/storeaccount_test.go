package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	acpsink "github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
)

// The line that says how many cards were not stored is the store's final
// word: a batch still in flight when the flush window ends is settled
// before the line is made, and nothing is written after it. Before, the
// line counted the batch in flight as not stored and closing the writer
// then committed it (after a PostgreSQL cut during a commit the retried
// batch was in flight at the end): the line said one batch more than the
// store lacked. The batch is held in flight here by a table lock, so the
// order is fixed: the flush window ends, the line is made, then the lock
// goes.
func TestNotStoredLineIsFinal(t *testing.T) {
	dsn := postgresDSN(t)
	var stderr bytes.Buffer
	sink, err := openSink(t.Context(), outputFlags{db: dsn}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	var pid int
	if err := lock.QueryRow(`SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`LOCK TABLE task_session_subagents IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	sink.BeginTurn("s1")
	sink.Record(acpsink.Event{Dialect: "claude", At: time.Now(), Event: adapter.Event{Kind: adapter.EventToolCall, SessionID: "s1", ToolCallID: "t1", Status: adapter.ToolStatusComplete,
		Payload: &adapter.Payload{Kind: adapter.PayloadKindSubagentTask, SubagentTask: &adapter.SubagentTask{Description: "d"}}}})
	// The card's batch is in flight once a query waits for the lock.
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		if err := db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the card's batch never reached the database")
		}
	}
	err = sink.endTurn(context.Background(), &stderr, outputFlags{timeout: time.Millisecond}, nil)
	var ns *notStoredError
	if !errors.As(err, &ns) {
		t.Fatalf("endTurn: %v, want the not-stored line", err)
	}
	m := regexp.MustCompile(`stored ([0-9]+) of 1 subagent cards`).FindStringSubmatch(ns.line)
	if m == nil {
		t.Fatalf("line %q", ns.line)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	sink.close()
	var rows int
	if err := db.QueryRow(`SELECT COUNT(*) FROM task_session_subagents`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if m[1] != "0" || rows != 0 {
		t.Fatalf("the line says %s stored (%s); the database holds %d row(s)", m[1], ns.line, rows)
	}
}
