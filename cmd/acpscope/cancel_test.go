package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangGuard is how long a run may take before a test calls it hung. It is
// a safety net against a hang, not a speed target.
const hangGuard = 2 * time.Minute

// runGuarded runs acpscope in-process under ctx and fails the test if it
// does not return within hangGuard.
func runGuarded(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), &out, &errOut) }()
	select {
	case code := <-done:
		return code, out.String(), errOut.String()
	case <-time.After(hangGuard):
		t.Fatalf("acpscope %v did not return: it hangs", args)
		return 0, "", ""
	}
}

// cancelledCard checks that the run's one card ended cancelled.
func cancelledCard(t *testing.T, out string) {
	t.Helper()
	cards := parseCards(t, out)
	if len(cards) != 1 || *cards[0].ToolStatus != "cancelled" {
		t.Fatalf("want one card ended cancelled, got:\n%s", out)
	}
}

// runCancelled runs `acpscope run --json --no-db --prompt x --cwd cwd`
// with args after them, fails the test unless the run exits cancelled with
// its one card ended cancelled, and returns the run's standard error.
func runCancelled(t *testing.T, ctx context.Context, cwd string, args ...string) string {
	t.Helper()
	code, out, errOut := runGuarded(t, ctx, append([]string{"run", "--json", "--no-db", "--prompt", "x", "--cwd", cwd}, args...)...)
	if code != exitCancelled {
		t.Fatalf("exit %d, want %d: %s", code, exitCancelled, errOut)
	}
	cancelledCard(t, out)
	return errOut
}

// An agent that honours session/cancel: --timeout sends it, the agent
// answers cancelled, the open card ends cancelled, and the run says so
// with the cancelled exit code.
func TestTimeoutCancelsTheTurn(t *testing.T) {
	errOut := runCancelled(t, context.Background(), t.TempDir(),
		"--timeout", "300ms", "--cancel-grace", "20s", "--", fakeAgent, "-mode", "cancel")
	if !strings.Contains(errOut, "--timeout 300ms reached") || !strings.Contains(errOut, "the agent stopped the turn (cancelled)") {
		t.Fatalf("message does not say what happened: %q", errOut)
	}
}

// An agent that ignores session/cancel is stopped after the grace period.
func TestTimeoutStopsAnAgentThatIgnoresCancel(t *testing.T) {
	errOut := runCancelled(t, context.Background(), t.TempDir(),
		"--timeout", "300ms", "--cancel-grace", "300ms", "--", fakeAgent, "-mode", "hang")
	if !strings.Contains(errOut, "did not answer within 300ms") {
		t.Fatalf("message does not say the agent was stopped: %q", errOut)
	}
}

// An agent that stops reading its standard input while the client has
// answers to write: the client's writes block on the full pipe, and the
// run must still end (the agent's process group is killed after the grace
// period, which ends the blocked writes).
func TestTimeoutEndsARunWhoseAgentStopsReading(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	runCancelled(t, context.Background(), dir,
		"--timeout", "1s", "--cancel-grace", "300ms", "--", fakeAgent, "-mode", "deaf", "-file", big)
}

// SIGINT and SIGTERM end the run's context; the turn is cancelled the same
// way as on --timeout.
func TestInterruptCancelsTheTurn(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	errOut := runCancelled(t, ctx, dir,
		"--cancel-grace", "20s", "--", fakeAgent, "-mode", "cancel", "-ready", ready)
	if !strings.Contains(errOut, "interrupted") {
		t.Fatalf("message does not say the run was interrupted: %q", errOut)
	}
}

// An agent that never answers initialize: there is no session to cancel,
// so --timeout stops the agent at once and says where the turn was.
func TestTimeoutBeforeTheSessionStopsTheAgent(t *testing.T) {
	code, _, errOut := runGuarded(t, context.Background(), "run", "--plain", "--no-db", "--prompt", "x", "--cwd", t.TempDir(),
		"--timeout", "300ms", "--", fakeAgent, "-mode", "mute")
	if code != exitCancelled || !strings.Contains(errOut, "during initialize") {
		t.Fatalf("exit %d, stderr %q; want %d naming initialize", code, errOut, exitCancelled)
	}
}

// SIGTERM and SIGINT to the acpscope process end a run whose agent stopped
// reading its input: the turn is cancelled, the agent's group is killed
// after the grace period, and acpscope exits with the cancelled code.
func TestSignalEndsARunWhoseAgentStopsReading(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			big := filepath.Join(dir, "big.txt")
			if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 1<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			ready := filepath.Join(dir, "ready")
			cmd := exec.Command(acpscopeBin, "run", "--json", "--no-db", "--prompt", "x", "--cwd", dir, "--cancel-grace", "300ms",
				"--", fakeAgent, "-mode", "deaf", "-file", big, "-ready", ready)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("acpscope ended before the turn was under way: %v\n%s", err, errOut.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(hangGuard):
				_ = cmd.Process.Kill()
				t.Fatalf("acpscope did not end after %v", sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != exitCancelled {
				t.Fatalf("exit %d, want %d: %s", code, exitCancelled, errOut.String())
			}
			cancelledCard(t, out.String())
		})
	}
}
