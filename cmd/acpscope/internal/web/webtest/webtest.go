// Package webtest holds what the tests of acpscope web share: driving a
// headless Chromium, reading the page's self-check, and seeding a large
// session. Only tests import it.
package webtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Chromium returns the browser binary ($ACPSCOPE_CHROMIUM, else
// /usr/bin/chromium). Browser tests are opt-in, as they take minutes on a
// small machine: the test skips unless ACPSCOPE_BROWSER_TESTS=1 (set by
// make web-test), under which a missing binary fails it.
func Chromium(t testing.TB) string {
	t.Helper()
	if os.Getenv("ACPSCOPE_BROWSER_TESTS") != "1" {
		t.Skip("browser tests run under ACPSCOPE_BROWSER_TESTS=1 (make web-test)")
	}
	bin := os.Getenv("ACPSCOPE_CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Chromium is required (ACPSCOPE_BROWSER_TESTS=1): %v", err)
	}
	return bin
}

// slots bounds concurrent Chromium processes on a small machine.
var slots = make(chan struct{}, 2)

// Run runs one headless Chromium with extra arguments and returns its
// standard output. Its process group is killed if it overruns 3 minutes.
func Run(t testing.TB, args ...string) []byte {
	t.Helper()
	bin := Chromium(t)
	slots <- struct{}{}
	defer func() { <-slots }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.Bytes()
}

// DumpDOM loads u and returns the serialised DOM after the load event (and
// after a --virtual-time-budget among extra, during which timers and
// fetches run).
func DumpDOM(t testing.TB, u string, extra ...string) string {
	t.Helper()
	return string(Run(t, append(extra, "--dump-dom", u)...))
}

var (
	bodyTag  = regexp.MustCompile(`<body([^>]*)>`)
	bodyAttr = regexp.MustCompile(`data-([a-z-]+)="([^"]*)"`)
)

// SelfCheck returns the data-* attributes of the dumped <body>: what the
// page's script rendered (tree-nodes, bars, lanes, rows, renders,
// render-ms, server-ms, injected). It fails when the script did not finish.
func SelfCheck(t testing.TB, dom string) map[string]string {
	t.Helper()
	m := bodyTag.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no <body> in the dump:\n%.2000s", dom)
	}
	attrs := map[string]string{}
	for _, a := range bodyAttr.FindAllStringSubmatch(m[1], -1) {
		attrs[a[1]] = a[2]
	}
	if attrs["selfcheck"] != "done" {
		t.Fatalf("the page's script did not finish: %v\n%.3000s", attrs, dom)
	}
	return attrs
}

// SeedSubagents stores one session of n subagents: nested under every
// tenth card, observed 50 ms apart, running up to 10 s each (so up to 200
// at once), a fifth failed or cancelled (a failed one with its reason, in
// a store with card facts), a few left open, some in the background.
func SeedSubagents(tb testing.TB, s *persistence.Store, session, execution string, n int) {
	tb.Helper()
	ctx := context.Background()
	if err := s.EnsureSession(ctx, session, session); err != nil {
		tb.Fatal(err)
	}
	start := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	for i := range n {
		f := persistence.Frame{TaskSessionID: session, TaskID: session, ToolCallID: fmt.Sprintf("call-%05d", i),
			ExecutionID: execution, Description: fmt.Sprintf("subagent %d", i),
			SubagentType: "general-purpose", TotalTokens: int64(100 + i), DurationMs: int64(1000 + i%700*10),
			IsAsync: i%50 == 7, ObservedAt: start.Add(time.Duration(i) * 50 * time.Millisecond)}
		if i >= 10 {
			f.ParentToolCallID = fmt.Sprintf("call-%05d", i/10)
		}
		if err := s.Upsert(ctx, f); err != nil {
			tb.Fatal(err)
		}
		if i%97 == 3 {
			continue // stays open
		}
		f.ToolStatus = []string{"completed", "completed", "completed", "failed", "cancelled"}[i%5]
		if f.ToolStatus == "failed" {
			f.Facts = &persistence.CardFacts{ErrorMessage: fmt.Sprintf("subagent %d: API error 400", i)}
		}
		f.ObservedAt = f.ObservedAt.Add(time.Duration(1+i%200) * 50 * time.Millisecond)
		if err := s.Upsert(ctx, f); err != nil {
			tb.Fatal(err)
		}
	}
}

// HostileFact is agent text for a card fact: markup for each page context
// (each payload sets data-xss on <body> if it runs), a right-to-left
// override that would reorder what is shown, a terminal escape and a
// second line.
const HostileFact = `<script>document.body.dataset.xss="fact"</script><img src=x onerror="document.body.dataset.xss='img'"> ` +
	"evil\u202etxt.exe\x1b[31m\nsecond line"

// HostileFactShown is HostileFact as the pages show it: the override and
// the control character neutralised (safetext.Lines), the line end kept.
const HostileFactShown = `<script>document.body.dataset.xss="fact"</script><img src=x onerror="document.body.dataset.xss='img'"> ` +
	"evil\ufffdtxt.exe\ufffd[31m\nsecond line"

// HostileReferrer is a referring tool call id with markup and a bidi
// override; HostileReferrerShown is how the pages show it.
const (
	HostileReferrer      = "t_<b>msg</b>\u202e"
	HostileReferrerShown = "t_<b>msg</b>\ufffd"
)

// SeedCardTruths stores, as acpscope does (s opened with
// persistence.WithCardFacts), session S: a failed card "failing" (its
// reason HostileFact), a card "again" messaged again (earlier answers
// "first answer" and HostileFact, result "third answer") that launched
// child session "again" holding the nested card "nested", a child "lost"
// the agent stopped tracking (unknown), referenced by the tool calls
// "t_stop" and HostileReferrer, and a card "late" still open. In
// the session view they are cards 0 to 4: failing, again, lost, late,
// nested.
func SeedCardTruths(tb testing.TB, s *persistence.Store, execution string) {
	tb.Helper()
	ctx := context.Background()
	for _, id := range []string{"S", "again"} {
		if err := s.EnsureSession(ctx, id, id); err != nil {
			tb.Fatal(err)
		}
	}
	start := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	frame := func(session, call string, at int, mod func(*persistence.Frame)) {
		f := persistence.Frame{TaskSessionID: session, TaskID: session, ToolCallID: call, ExecutionID: execution,
			ChildSessionID: call, Description: "card " + call, SubagentType: "general-purpose",
			ObservedAt: start.Add(time.Duration(at) * time.Second)}
		mod(&f)
		if err := s.Upsert(ctx, f); err != nil {
			tb.Fatal(err)
		}
	}
	frame("S", "failing", 0, func(f *persistence.Frame) {
		f.ToolStatus = "failed"
		f.Facts = &persistence.CardFacts{ErrorMessage: HostileFact}
	})
	frame("S", "again", 1, func(f *persistence.Frame) {
		f.ToolStatus, f.ResultText = "completed", "third answer"
		f.Facts = &persistence.CardFacts{EarlierResults: []string{"first answer", HostileFact}}
	})
	frame("again", "nested", 2, func(f *persistence.Frame) {
		f.ToolStatus = "completed"
		f.Facts = &persistence.CardFacts{ParentSessionID: "S"}
	})
	frame("S", "lost", 3, func(f *persistence.Frame) { f.ToolStatus = "in_progress" })
	frame("S", "lost", 4, func(f *persistence.Frame) {
		f.ToolStatus = "unknown"
		f.Facts = &persistence.CardFacts{ReferencedBy: []string{"t_stop", HostileReferrer}}
	})
	frame("S", "late", 60, func(f *persistence.Frame) { f.ToolStatus = "in_progress" })
}
