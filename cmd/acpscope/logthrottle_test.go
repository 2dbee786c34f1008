package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// An agent that writes junk lines without end must not flood standard
// error: repeats of one log message are summarised, not printed each time.
func TestJunkFromTheAgentDoesNotFloodStderr(t *testing.T) {
	code, _, errOut := acpscope(t, "", "run", "--no-db", "--plain", "--prompt", "x", "--cwd", t.TempDir(), "--", fakeAgent, "-mode", "junk")
	if code != exitTurn {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	if lines := strings.Count(errOut, "\n"); lines > 40 {
		t.Fatalf("%d lines on standard error for 20,000 junk lines; want a summary:\n%s", lines, errOut[:min(len(errOut), 2000)])
	}
	if !strings.Contains(errOut, "suppressed") {
		t.Fatalf("no summary of the suppressed repeats:\n%s", errOut)
	}
}

// The throttle prints a message logBurst times, then one summary per
// interval with the count of what it held back, and the rest at flush.
func TestThrottleSummarisesRepeats(t *testing.T) {
	var buf strings.Builder
	now := time.Unix(0, 0)
	h := newThrottle(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}), func() time.Time { return now })
	log := slog.New(h)
	for range 100000 {
		log.Error("junk", "raw", "{}")
	}
	log.Warn("other")
	now = now.Add(2 * logInterval)
	log.Error("junk", "raw", "{}")
	h.flush()
	got := buf.String()
	want := strings.Repeat("level=ERROR msg=junk raw={}\n", logBurst) +
		"level=ERROR msg=junk raw={} suppressed=1\n" + // the first repeat opens the window
		"level=WARN msg=other\n" +
		"level=ERROR msg=junk raw={} suppressed=99995\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
