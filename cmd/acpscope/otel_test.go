package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
)

// run puts each turn's traceparent into the prompt's _meta only when it
// exports, and not under --no-traceparent; export needs a collector.
func TestRunTraceparentFlag(t *testing.T) {
	closed := fmt.Sprintf("http://127.0.0.1:%d", freeLoopbackPort(t))
	tid := traces.TraceIDOf("tp-session").String()
	for _, c := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"no export", nil, "-\n-\n"},
		{"export", []string{"--otlp", closed}, fmt.Sprintf("00-%s-%s-01\n00-%s-%s-01\n", tid, traces.TurnSpanID("tp-session", 1), tid, traces.TurnSpanID("tp-session", 2))},
		{"export, --no-traceparent", []string{"--otlp", closed, "--no-traceparent"}, "-\n-\n"},
	} {
		state := filepath.Join(t.TempDir(), "tp")
		args := append(append([]string{"run", "--no-db", "--plain", "--permission", "allow", "--prompt", "one", "--prompt", "two"}, c.flags...),
			"--", fakeAgent, "-mode", "traced", "-state", state, "-sid", "tp-session")
		code, _, errOut := acpscope(t, "", args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", c.name, code, errOut)
		}
		got, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s: the agent got traceparents\n%s, want\n%s", c.name, got, c.want)
		}
		if exported := strings.Contains(errOut, "acpscope: traces:"); exported != (c.flags != nil) {
			t.Errorf("%s: closing report %v: %s", c.name, exported, errOut)
		}
	}
	code, _, errOut := acpscope(t, "", "export", "--session", "tp-session", "--db", filepath.Join(t.TempDir(), "none.db"))
	if code != exitUsage || !strings.Contains(errOut, "export needs a collector") {
		t.Errorf("export without a collector: exit %d: %s", code, errOut)
	}
}
