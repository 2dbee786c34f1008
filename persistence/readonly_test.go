package persistence

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readOnlyDSN makes the env's database read-only for what follows and
// returns the DSN a reader uses: on SQLite the file and its directory lose
// their write bits (root ignores them; mode=ro is what keeps SQLite from
// writing, and the test checks no byte and no file changed); on PostgreSQL
// a new role that may only SELECT in the test's schema.
func (e *env) readOnlyDSN() string {
	e.t.Helper()
	if e.kind == SQLite {
		path := strings.TrimPrefix(e.dsn, "sqlite://")
		dir := filepath.Dir(path)
		if err := os.Chmod(path, 0o444); err != nil {
			e.t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(path, 0o644) })
		return e.dsn
	}
	var schema string
	if err := e.raw.QueryRow(`SELECT current_schema()`).Scan(&schema); err != nil {
		e.t.Fatal(err)
	}
	role := "acp_ro_" + randHex(6)
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + role,
	} {
		if _, err := pgAdmin.Exec(q); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Cleanup(func() {
		_, _ = pgAdmin.Exec(`DROP OWNED BY ` + role)
		_, _ = pgAdmin.Exec(`DROP ROLE ` + role)
	})
	u, err := url.Parse(e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// fileBytes is the SQLite database file's content, to show a read-only
// open changed nothing. (Run as root, SQLite may still create the WAL
// index files beside it, which a read-only directory forbids otherwise.)
func fileBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A migrated database opened read-only (read-only file and directory, a
// SELECT-only role) lists and checks health, and writes nothing.
func TestOpenReadOnlyReads(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1"))
		s.Close()
		dsn := e.readOnlyDSN()
		path, before := "", ""
		if e.kind == SQLite {
			path = strings.TrimPrefix(e.dsn, "sqlite://")
			before = fileBytes(t, path)
		}
		ro, err := OpenReadOnly(e.ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if rows, err := ro.ListBySession(e.ctx, "S"); err != nil || len(rows) != 1 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		if h, err := ro.Health(e.ctx); err != nil || h.State != StateFullyActivated || !h.Compared {
			t.Fatalf("%+v %v", h, err)
		}
		if rep := ro.Migrate(e.ctx); rep.OK() {
			t.Fatal("Migrate ran on a read-only store")
		}
		if err := ro.Upsert(e.ctx, *frame("tc2")); err == nil {
			t.Fatal("a read-only store wrote")
		}
		ro.Close()
		if path != "" && fileBytes(t, path) != before {
			t.Fatal("the read-only open changed the database file")
		}
	})
}

// A database without the schema, or none at all, is reported as needing
// migration, and the read-only open creates nothing.
func TestOpenReadOnlyNeedsMigration(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		_, err := OpenReadOnly(e.ctx, e.dsn)
		if !errors.Is(err, ErrNeedsMigration) {
			t.Fatalf("want ErrNeedsMigration, got %v", err)
		}
		if e.kind == SQLite {
			if _, serr := os.Stat(strings.TrimPrefix(e.dsn, "sqlite://")); !errors.Is(serr, os.ErrNotExist) {
				t.Fatalf("the read-only open created the file (%v)", serr)
			}
			e.exec(`CREATE TABLE unrelated (x INTEGER)`)
			if _, err := OpenReadOnly(e.ctx, e.dsn); !errors.Is(err, ErrNeedsMigration) {
				t.Fatalf("want ErrNeedsMigration, got %v", err)
			}
		}
		e.hostTables()
		e.preAmendmentTable("INTEGER")
		_, err = OpenReadOnly(e.ctx, e.dsn)
		if !errors.Is(err, ErrNeedsMigration) || !strings.Contains(err.Error(), "execution-aware") {
			t.Fatalf("want ErrNeedsMigration naming the shape, got %v", err)
		}
	})
}

// silentServer accepts TCP connections on 127.0.0.1 and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A server that accepts and never answers: Open returns once the connect
// timeout (default when the DSN sets none) or the context ends.
func TestOpenBoundedConnect(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	dsn := "postgres://nobody@" + addr + "/x?sslmode=disable"
	if _, err := Open(context.Background(), dsn, WithConnectTimeout(1)); err == nil {
		t.Fatal("opened a silent server")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, dsn, WithConnectTimeout(0)); err == nil {
		t.Fatal("opened a silent server with a cancelled context")
	}
	if _, err := OpenReadOnly(context.Background(), dsn, WithConnectTimeout(1)); err == nil {
		t.Fatal("opened a silent server read-only")
	}
}

func TestPostgresSettings(t *testing.T) {
	for _, c := range []struct {
		dsn      string
		readOnly bool
		want     []string
	}{
		{"postgres://u@h/db", false, []string{"connect_timeout=10"}},
		{"postgres://u@h/db?connect_timeout=3&sslmode=disable", true, []string{"connect_timeout=3", "default_transaction_read_only=on", "sslmode=disable"}},
	} {
		got := postgresSettings(c.dsn, defaultConnectTimeout, c.readOnly)
		u, err := url.Parse(got)
		if err != nil {
			t.Fatal(err)
		}
		var params []string
		for k, v := range u.Query() {
			params = append(params, k+"="+v[0])
		}
		slices.Sort(params)
		if !slices.Equal(params, c.want) {
			t.Errorf("%s: %v", c.dsn, params)
		}
	}
}

// A writing open in a directory it cannot write names the directory, not
// "no such file or directory". (Root writes anywhere: the test then skips;
// run it as another user.)
func TestOpenUnwritableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	_, err := Open(context.Background(), filepath.Join(dir, "acp.db"))
	if err == nil || !strings.Contains(err.Error(), "is not writable") {
		t.Fatalf("want the directory named as not writable, got %v", err)
	}
}
