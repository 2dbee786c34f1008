// Package pgtest gives tests outside the persistence package a PostgreSQL
// database of their own: a fresh schema on the server that
// ACP_TEST_POSTGRES_DSN names, dropped when the test ends. Without the
// variable, or with the server unreachable, the test is skipped, and it
// fails instead under CI=true, where the server must be there.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// SchemaDSN returns a DSN whose search_path is a new schema named after
// prefix, created for t and dropped (with everything in it) when t ends.
func SchemaDSN(t testing.TB, prefix string) string {
	t.Helper()
	base := os.Getenv("ACP_TEST_POSTGRES_DSN")
	ci := os.Getenv("CI") == "true"
	if base == "" {
		if ci {
			t.Fatal("ACP_TEST_POSTGRES_DSN is not set under CI=true")
		}
		t.Skip("ACP_TEST_POSTGRES_DSN not set")
	}
	db, err := sql.Open("pgx", base)
	if err == nil {
		err = db.PingContext(context.Background())
	}
	if err != nil {
		if ci {
			t.Fatalf("PostgreSQL unreachable under CI=true: %v", err)
		}
		t.Skipf("PostgreSQL unreachable: %v", err)
	}
	schema := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
		db.Close()
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
