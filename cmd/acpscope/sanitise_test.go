package main

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
)

// hostileCapture is a capture whose agent put escape sequences (OSC 52
// clipboard write, OSC 0 window title, clear-screen, a C1 CSI) and
// bidirectional overrides into every field acpscope shows or stores.
var hostileCapture = filepath.Join("testdata", "hostile", "inject.jsonl")

// assertClean fails when out holds a control character other than a line
// end, a bidirectional formatting character or invalid UTF-8.
func assertClean(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s: invalid UTF-8 reached the output", what)
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && safetext.Forbidden(r) }); i >= 0 {
		t.Fatalf("%s: forbidden rune %U reached the output at %d:\n%q", what, []rune(out[i:])[0], i, out)
	}
}

// TestHostileTextNeverReachesTheTerminal replays the hostile capture in
// every output form and lists what it stored: no byte that came from the
// agent or the database may drive the terminal.
func TestHostileTextNeverReachesTheTerminal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scope.db")
	code, out, errOut := acpscope(t, "", "replay", "--plain", "--db", db, hostileCapture)
	if code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "desc") || !strings.Contains(out, "result") {
		t.Fatalf("the card was not shown:\n%s", out)
	}
	assertClean(t, "replay --plain", out+errOut)

	code, out, errOut = acpscope(t, "", "replay", "--json", "--no-db", hostileCapture)
	if code != exitOK {
		t.Fatalf("replay --json exit %d: %s", code, errOut)
	}
	parseCards(t, out)
	assertClean(t, "replay --json", out+errOut)

	code, out, errOut = acpscope(t, "", "subagents", "--session", "inj\x1b]0;title\x07", "--db", db)
	if code != exitOK || !strings.Contains(out, "desc") {
		t.Fatalf("subagents exit %d:\n%s%s", code, out, errOut)
	}
	assertClean(t, "subagents", out+errOut)
}
