package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
)

// run --web's Stop end to end: the fake agent announces two child
// sessions, one granted cancel; the session page offers Stop on that one
// only; a click sends session/cancel for that child (the agent notes it),
// and the card settles cancelled on the page.
func TestBrowserRunWebStop(t *testing.T) {
	b := webtest.OpenBrowser(t)
	dir := t.TempDir()
	ready, start, cancels := filepath.Join(dir, "ready"), filepath.Join(dir, "go"), filepath.Join(dir, "cancels")
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"run", "--plain", "--subagents", "--db", filepath.Join(dir, "run.db"), "--prompt", "review",
			"--cwd", dir, "--web", "127.0.0.1:0", "--", fakeAgent, "-mode", "stop", "-ready", ready, "-go", start, "-state", cancels},
			strings.NewReader(""), &lockedBuffer{}, &stderr)
	}()
	base := webURL(t, &stderr, "acpscope run --web")
	waitFile(t, ready)
	b.Open(base+"session?id=fake-session", 1024, 800, 1)
	b.WaitFor(`document.querySelectorAll("#running li.run-card").length === 2 && document.querySelector("#running button.stop")`)
	var buttons []string
	b.Eval(`Array.prototype.map.call(document.querySelectorAll("#running button.stop"), function (b) { return b.dataset.child; })`, &buttons)
	if len(buttons) != 1 || buttons[0] != "child-stop" {
		t.Fatalf("Stop buttons for %v, want [child-stop] only", buttons)
	}
	b.Eval(`document.querySelector("#running button.stop").click(); true`, nil)
	b.WaitFor(`document.body.dataset.stop === "202"`)
	// The agent got session/cancel for that child, and the card settles
	// cancelled on the page (its store changed; the page polls).
	b.WaitFor(`Array.prototype.some.call(document.querySelectorAll("#tree li.st-cancelled .label"), function (l) { return l.textContent.indexOf("Stoppable review") >= 0; })`)
	got, err := os.ReadFile(cancels)
	if err != nil || string(got) != "child-stop\n" {
		t.Fatalf("the agent got session/cancel for %q (%v), want child-stop only", got, err)
	}
	var running int
	b.Eval(`document.querySelectorAll("#running li.run-card").length`, &running)
	if running != 1 {
		t.Errorf("%d children still shown running, want 1 (child-keep)", running)
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != exitOK {
		t.Fatalf("run exit %d: %s", code, stderr.Bytes())
	}
}
