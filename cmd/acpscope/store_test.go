package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	if code != exitOK || !strings.Contains(out, "CREATE TABLE IF NOT EXISTS task_session_subagents") || !strings.Contains(out, "-- task_session_subagents.schema") {
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
