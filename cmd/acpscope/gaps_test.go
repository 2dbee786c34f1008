package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A session whose observation the tap could not complete says so in
// `sessions` (the table's OBSERVED column, and --json); the others read
// complete.
func TestSessionsShowIncompleteObservation(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gaps.db")
	s, err := openStore(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"lossy", "whole"} {
		if err := s.EnsureSession(t.Context(), id, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkObservationIncomplete(t.Context(), "lossy", 5); err != nil {
		t.Fatal(err)
	}
	s.Close()

	code, out, errOut := acpscope(t, "", "sessions", "--db", db, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		lossy := strings.Contains(line, `"id":"lossy"`)
		if got := strings.Contains(line, `"observation_incomplete":true,"unobserved":5`); got != lossy {
			t.Errorf("--json line %s: marked %v, want %v", line, got, lossy)
		}
	}
	code, out, errOut = acpscope(t, "", "sessions", "--db", db)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasSuffix(strings.Fields(lines[0])[len(strings.Fields(lines[0]))-1], "OBSERVED") {
		t.Errorf("header %q has no OBSERVED column", lines[0])
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		want := "whole"
		if f[0] == "lossy" {
			want = "incomplete(5)"
		}
		if f[len(f)-1] != want {
			t.Errorf("row %q: observed %q, want %q", line, f[len(f)-1], want)
		}
	}
}
