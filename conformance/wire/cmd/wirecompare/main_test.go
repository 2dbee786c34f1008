package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func transcripts(ts ...Transcript) map[string]Transcript {
	m := map[string]Transcript{}
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

func TestCompareAllowlist(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sdk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sdk", "x_test.go"), []byte("package acp\n\nfunc TestPinned(t *testing.T) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	same := Transcript{Name: "same", Lines: []string{"a"}}
	up := Transcript{Name: "changed", Lines: []string{`{"error":{"code":-32601}}`}}
	fork := Transcript{Name: "changed", Lines: []string{`{"result":{}}`}}
	allow := func(forkContains string) []Allowed {
		return []Allowed{{Name: "deliberate", PinnedBy: []string{"sdk/x_test.go:TestPinned"}, Scenarios: []string{"changed"},
			ForkContains: []string{forkContains}, UpstreamContains: []string{"-32601"}}}
	}

	cases := []struct {
		name     string
		up, fork map[string]Transcript
		allow    []Allowed
		failures int
		allowed  int
	}{
		{"identical", transcripts(same), transcripts(same), nil, 0, 0},
		{"unlisted difference", transcripts(same, up), transcripts(same, fork), nil, 1, 0},
		{"allowed difference", transcripts(same, up), transcripts(same, fork), allow(`"result"`), 0, 1},
		{"difference of another kind", transcripts(same, up), transcripts(same, fork), allow(`"other"`), 1, 0},
		{"deliberate change missing", transcripts(same, up), transcripts(same, up), allow(`"result"`), 1, 0},
		{"missing scenario", transcripts(same, up), transcripts(same), allow(`"result"`), 1, 0},
		{"pinning test missing", transcripts(up), transcripts(fork), []Allowed{{Name: "x", PinnedBy: []string{"sdk/x_test.go:TestGone"}, Scenarios: []string{"changed"}}}, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compare(io.Discard, c.up, c.fork, c.allow, root, 10)
			if len(s.Failures) != c.failures || len(s.Allowed) != c.allowed {
				t.Fatalf("failures %q, allowed %q; want %d failures, %d allowed", s.Failures, s.Allowed, c.failures, c.allowed)
			}
		})
	}
}

func TestAllowlistLoads(t *testing.T) {
	list, err := loadAllowlist(filepath.Join("..", "..", "allowlist.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.Name == "" || a.Why == "" || len(a.Scenarios) == 0 || len(a.PinnedBy) == 0 {
			t.Errorf("incomplete entry %+v", a)
		}
		for _, p := range a.PinnedBy {
			if !strings.HasPrefix(p, "sdk/") {
				t.Errorf("%s: pinning test %s is not in sdk/", a.Name, p)
			}
		}
	}
}
