package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/procguard"
)

// errAuxTimeout reports an auxiliary command that outlived its timeout.
var errAuxTimeout = errors.New("timed out")

// runAux runs a short auxiliary command (--help, --version, status,
// --list-models) under the process guard: stdin /dev/null, NO_COLOR=1, its
// stdout kept up to MaxAuxOutputBytes (the rest drained and dropped), stderr
// discarded, the whole group killed on timeout or cancellation.
func runAux(ctx context.Context, path string, args []string, timeout time.Duration, env []string, guard procguard.Options) ([]byte, int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, -1, err
	}
	defer r.Close()
	cmd := exec.Command(path, args...)
	cmd.Env = childEnv(env)
	cmd.Stdout = w
	cmd.Stderr = nil // /dev/null
	guard.WatchFiles = []*os.File{r}
	p, err := procguard.Start(cmd, guard)
	w.Close()
	if err != nil {
		return nil, -1, err
	}
	type readResult struct{ out []byte }
	done := make(chan readResult, 1)
	go func() {
		out, _ := io.ReadAll(io.LimitReader(r, MaxAuxOutputBytes))
		_, _ = io.Copy(io.Discard, r) // keep draining so the child never blocks
		done <- readResult{out}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var out []byte
	var runErr error
	select {
	case res := <-done:
		out = res.out
		select {
		case <-p.Exited():
		case <-timer.C:
			runErr = errAuxTimeout
		case <-ctx.Done():
			runErr = ctx.Err()
		}
	case <-timer.C:
		runErr = errAuxTimeout
	case <-ctx.Done():
		runErr = ctx.Err()
	}
	p.Terminate()
	if runErr != nil {
		r.Close()
		if res, ok := <-done; ok {
			out = res.out
		}
		return out, -1, runErr
	}
	code, _, _ := p.ExitCode()
	return out, code, nil
}

// EnableGuardProcess opts the host program into guard processes: call it
// first thing in main (and in TestMain of tests that run turns). A process
// started as a guard runs the guard and exits here, never returning; in the
// host it returns at once, and from then on every CLI turn and probe runs
// under a guard process that tears the CLI and all its descendants down
// when the host dies, even by SIGKILL. Without it, the guard runs in the
// host process (see README, "The process guard").
func EnableGuardProcess() { procguard.EnableGuardProcess() }

// childEnv is the environment of every spawned CLI process: the host's,
// plus NO_COLOR=1, plus the configured extras (later entries win).
func childEnv(extra []string) []string {
	env := os.Environ()
	env = append(env, "NO_COLOR=1")
	return append(env, extra...)
}
