package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// schemePrefix matches a URL scheme at the start of a DSN.
var schemePrefix = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// checkDSN refuses a --db value with a URL scheme the store does not
// support (mysql://…), which would otherwise be taken as a SQLite file
// name. A plain path, sqlite:…, file:… and postgres://… pass.
func checkDSN(dsn string) error {
	m := schemePrefix.FindStringSubmatch(dsn)
	if m == nil {
		return nil
	}
	switch strings.ToLower(m[1]) {
	case "postgres", "postgresql", "sqlite", "file":
		return nil
	}
	return fmt.Errorf("--db: unsupported database scheme %q: use a SQLite file path, sqlite://…, file:… or postgres://…", m[1])
}

// explainDBError turns an open failure of a SQLite database whose file does
// not exist yet into what is wrong with its directory, when that is the
// cause: the directory is missing, or acpscope may not create files in it.
// Any other error is returned as it is.
func explainDBError(dsn string, err error) error {
	if err == nil || dsn == "" {
		return err
	}
	path, ok := sqlitePath(dsn)
	if !ok {
		return err
	}
	if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
		return err // the file exists: its own error says more
	}
	dir := filepath.Dir(path)
	st, serr := os.Stat(dir)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return fmt.Errorf("database: the directory %s of %s does not exist", dir, path)
	case serr == nil && !st.IsDir():
		return fmt.Errorf("database: %s is not a directory", dir)
	case serr != nil:
		return fmt.Errorf("database: %v", serr)
	}
	probe, perr := os.CreateTemp(dir, ".acpscope-probe-*")
	if perr != nil {
		return fmt.Errorf("database: the directory %s is not writable, so %s cannot be created: %v", dir, filepath.Base(path), errors.Unwrap(perr))
	}
	probe.Close()
	os.Remove(probe.Name())
	return err
}

// sqlitePath is the file of a SQLite DSN (a plain path, sqlite:…,
// sqlite://…, file:…, query removed); ok is false for other engines and
// in-memory databases.
func sqlitePath(dsn string) (string, bool) {
	p := dsn
	for _, prefix := range []string{"sqlite://", "sqlite:", "file:"} {
		if strings.HasPrefix(p, prefix) {
			p = strings.TrimPrefix(p, prefix)
			break
		}
	}
	if schemePrefix.MatchString(p) || strings.Contains(p, ":memory:") || strings.Contains(p, "mode=memory") {
		return "", false
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p, p != ""
}
