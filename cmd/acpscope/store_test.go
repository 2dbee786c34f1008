package main

import (
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/persistence"
	_ "github.com/mattn/go-sqlite3"
)

// replay stores each card's prompt and result text (acpscope opens its
// store with persistence.WithSubagentText), mapped from the adapter's
// payload; the read-only store the web uses reads them back.
func TestReplayStoresPromptAndResult(t *testing.T) {
	db := replayDemo(t)
	s, err := openStoreReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.ListBySession(t.Context(), "cl-91b0")
	if err != nil || len(rows) == 0 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	got, err := s.SubagentTexts(t.Context(), "cl-91b0", rows[0].AgentExecutionID, "toolu_A")
	if err != nil {
		t.Fatal(err)
	}
	if got.Prompt == nil || *got.Prompt != "Find the root cause of the TestRetry flake" {
		t.Fatalf("prompt %v", got.Prompt)
	}
	if got.ResultText == nil || !strings.HasPrefix(*got.ResultText, "VERDICT: the retry loop") || got.ResultTruncated() {
		t.Fatalf("result %+v", got)
	}
}

// subagents and health open the database read-only: they work on a
// read-only file in a read-only directory and change no byte of it.
func TestReadCommandsOnReadOnlyDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "scope.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", db); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	code, out, errOut := acpscope(t, "", "subagents", "--session", "cur-7f3a", "--db", db)
	if code != exitOK || !strings.Contains(out, "tool_2494c23d-js") {
		t.Fatalf("subagents exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut = acpscope(t, "", "health", "--db", db)
	if code == exitUsage || !strings.Contains(out, "activation:        fully_activated") {
		t.Fatalf("health exit %d: %s%s", code, out, errOut)
	}
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatal("a read command changed the database file")
	}
}

// A read command on a database that does not exist says it needs
// migration and creates nothing.
func TestReadCommandsNeedMigration(t *testing.T) {
	db := filepath.Join(t.TempDir(), "none.db")
	for _, args := range [][]string{{"subagents", "--session", "S", "--db", db}, {"health", "--db", db}} {
		code, _, errOut := acpscope(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "needs migration") || !strings.Contains(errOut, "acpscope migrate") {
			t.Fatalf("%s: exit %d: %s", args[0], code, errOut)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("a read command created the database (%v)", err)
	}
}

// A database in a directory that does not exist is reported as such.
func TestRunDatabaseDirectoryMissing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "missing", "scope.db")
	code, _, errOut := acpscope(t, "", "run", "--db", db, "--prompt", "hi", "--", fakeAgent)
	if code != exitUsage || !strings.Contains(errOut, "directory") || !strings.Contains(errOut, "missing") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// A PostgreSQL server that accepts and never answers: run returns (exit 2)
// once the default connect timeout ends, instead of hanging.
func TestRunSilentPostgres(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(held)
				return
			}
			held <- c
		}
	}()
	defer func() {
		ln.Close()
		for c := range held {
			c.Close()
		}
	}()
	dsn := "postgres://nobody@" + ln.Addr().String() + "/x?sslmode=disable"
	code, _, errOut := acpscope(t, "", "run", "--db", dsn, "--prompt", "hi", "--", fakeAgent)
	if code != exitUsage || !strings.Contains(errOut, "database") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// migrate --dry-run prints the plan and changes nothing; migrate applies
// it; the read commands then work, and a second dry run has nothing to do.
func TestMigrateCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scope.db")
	code, out, errOut := acpscope(t, "", "migrate", "--dry-run", "--db", db)
	if code != exitOK || !strings.Contains(out, "CREATE TABLE IF NOT EXISTS task_session_subagents") || !strings.Contains(out, "-- task_session_subagents.schema") ||
		!strings.Contains(out, "-- "+persistence.StepTexts+"\nCREATE TABLE IF NOT EXISTS task_session_subagent_texts") ||
		!strings.Contains(out, "-- "+persistence.StepTraceFacts+"\nCREATE TABLE IF NOT EXISTS task_session_trace_turns") {
		t.Fatalf("dry run exit %d:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("the dry run created the database (%v)", err)
	}
	if code, out, errOut := acpscope(t, "", "migrate", "--db", db); code != exitOK || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := acpscope(t, "", "subagents", "--session", "S", "--db", db); code != exitOK {
		t.Fatalf("subagents after migrate: exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, _ := acpscope(t, "", "migrate", "--dry-run", "--db", db); code != exitOK || !strings.Contains(out, "nothing to do") {
		t.Fatalf("second dry run exit %d:\n%s", code, out)
	}
}

// A dry run prints a host's own table definition when the plan rebuilds
// it: that text is the host's, so it passes the sanitiser like every byte
// acpscope prints from a database.
func TestMigrateDryRunSanitisesHostText(t *testing.T) {
	db := filepath.Join(t.TempDir(), "host.db")
	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("CREATE TABLE task_session_subagents (\n" +
		"\tid TEXT PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL,\n" +
		"\tturn_id TEXT, tool_call_id TEXT NOT NULL, parent_tool_call_id TEXT, subagent_type TEXT,\n" +
		"\tdescription TEXT, agent_id TEXT, child_session_id TEXT, model TEXT, agent_status TEXT,\n" +
		"\ttool_status TEXT, is_async INTEGER NOT NULL DEFAULT 0, total_tokens INTEGER,\n" +
		"\ttool_use_count INTEGER, duration_ms INTEGER, source TEXT NOT NULL DEFAULT 'live',\n" +
		"\tobserved_at TIMESTAMP NOT NULL, settled_at TIMESTAMP, updated_at TIMESTAMP NOT NULL,\n" +
		"\t\"notes\x1b]0;pwned\x07\u202e\" TEXT,\n" +
		"\tUNIQUE (task_session_id, tool_call_id))"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := acpscope(t, "", "migrate", "--dry-run", "--db", db)
	if code != exitOK {
		t.Fatalf("dry run exit %d:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "notes") {
		t.Fatalf("the plan does not show the host's definition:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Fatalf("control or bidi characters reached the output: %q", out)
	}
}
