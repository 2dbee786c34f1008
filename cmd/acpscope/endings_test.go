package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startScope starts the acpscope binary on a turn whose agent opens a card
// and answers session/cancel with cancelled, storing into db; it returns
// once the card is open.
func startScope(t *testing.T, db string, stdout *os.File) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(acpscopeBin, "run", "--plain", "--db", db, "--prompt", "x", "--cwd", dir, "--cancel-grace", "2s",
		"--", fakeAgent, "-mode", "cancel", "-ready", ready)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		if _, err := os.Stat(ready); err == nil {
			return cmd, &errOut, exited
		}
		select {
		case err := <-exited:
			t.Fatalf("acpscope ended before the turn was under way: %v\n%s", err, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// awaitEnd waits for acpscope to end, checks its exit code and that the
// turn's card is stored cancelled (not left in_progress).
func awaitEnd(t *testing.T, cmd *exec.Cmd, errOut *bytes.Buffer, exited <-chan error, db string, want int) {
	t.Helper()
	select {
	case <-exited:
	case <-time.After(hangGuard):
		_ = cmd.Process.Kill()
		t.Fatalf("acpscope did not end")
	}
	if code := cmd.ProcessState.ExitCode(); code != want {
		t.Fatalf("exit %d, want %d: %s", code, want, errOut.String())
	}
	if !strings.Contains(errOut.String(), "sent session/cancel; the agent stopped the turn (cancelled)") {
		t.Fatalf("the turn did not go through the cancel path: %s", errOut.String())
	}
	rows := storedRows(t, db, "fake-session")
	if r, ok := rows["toolu_LONG"]; !ok || *r.ToolStatus != "cancelled" {
		t.Fatalf("the open card is not stored cancelled: %+v", rows)
	}
}

// SIGHUP (the terminal closed) and SIGQUIT end the turn as SIGINT and
// SIGTERM do: session/cancel, the agent's answer, the open card stored
// cancelled; the exit code names the signal.
func TestHangupAndQuitGoThroughTheCancelPath(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGHUP: exitHangup, syscall.SIGQUIT: exitQuit} {
		t.Run(sig.String(), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "scope.db")
			cmd, errOut, exited := startScope(t, db, nil)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			awaitEnd(t, cmd, errOut, exited, db, want)
		})
	}
}

// A standard output whose reader went away (`acpscope run … | head -1`)
// ends the turn through the cancel path too, even while nothing is
// written, and the store still gets every card.
func TestClosedStdoutGoesThroughTheCancelPath(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scope.db")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd, errOut, exited := startScope(t, db, w)
	w.Close()
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	r.Close() // as head -1 does
	awaitEnd(t, cmd, errOut, exited, db, exitOutputClosed)
}
