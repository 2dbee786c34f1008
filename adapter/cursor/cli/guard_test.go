package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/procguard"
	"github.com/kdlbs/acp-go-sdk/internal/proctest"
)

// hostEnv makes the test binary a host (see hostMain); hostBinEnv names the
// fake it runs a turn with.
const (
	hostEnv    = "CURSORHOST"
	hostBinEnv = "CURSORHOST_BIN"
)

// hostMain is a host program that opted into guard processes (TestMain
// called EnableGuardProcess): it admits the fake named by
// hostBinEnv and runs one turn with it, which hangs until the host is
// killed.
func hostMain() int {
	d := &Discoverer{Getenv: func(k string) string {
		if k == SourceEnv {
			return os.Getenv(hostBinEnv)
		}
		return ""
	}}
	disc := d.Discover(context.Background())
	if disc.Selected == nil {
		fmt.Fprintln(os.Stderr, "host: fake not admitted")
		return 1
	}
	to := fastTimeouts
	to.Startup, to.Idle, to.IdleWarning, to.WallClock = time.Hour, time.Hour, time.Hour, time.Hour
	r := &Runner{Executable: disc.Selected, Timeouts: to}
	res, err := r.Run(context.Background(), Turn{Plan: SessionState{}.PlanTurn(Instructions{}, "x"), Dir: os.TempDir()})
	fmt.Fprintln(os.Stderr, "host: turn ended:", res.Class, err)
	return 1
}

// docs/cursor-cli.md#scenario-34 (guard process): the host is SIGKILLed mid-turn; the guard
// process notices and tears down the CLI, a grandchild in its process group
// and a detached (setsid) one ignoring SIGTERM, both holding stdout.
func TestRunHostKilledGuardTearsDownTree(t *testing.T) {
	skipWithoutGuardProcess(t)
	checkNoLeftovers(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	bin := fakeBin(t, dir, "cursor-agent", fakeScriptEnv+"="+strings.Join([]string{
		out(lineInit), "spawn-detached ignore-term", "spawn-child", "pids " + pidFile, "hang",
	}, "\n"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(self)
	host.Env = append(os.Environ(), hostEnv+"=1", hostBinEnv+"="+bin)
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	deadline := time.Now().Add(60 * time.Second) // hang guard only
	for len(pids) == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 && time.Now().After(deadline) {
			_ = host.Process.Kill()
			_ = host.Wait()
			t.Fatal("the fake never reported its pids")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// pids: the fake, its parent (the guard), the detached grandchild and
	// the same-group one.
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pids[1]) + "/cmdline")
	_ = host.Process.Kill()
	_ = host.Wait()
	if len(pids) != 4 || slicesContainsNonPositive(pids) {
		proctest.AwaitGone(t, pids)
		t.Fatalf("fake reported %v", pids)
	}
	if pids[1] == host.Process.Pid || !strings.HasPrefix(string(cmdline), "acp-procguard\x00") {
		proctest.AwaitGone(t, pids)
		t.Fatalf("the fake's parent %d (%q) is not a guard process", pids[1], cmdline)
	}
	proctest.AwaitGone(t, pids)
}

// slowSpawns gives a script that starts descendants (each an exec of this
// race-instrumented binary, slow on a loaded machine) room before its next
// line: the idle timer is not what those tests are about.
func (f *turnFixture) slowSpawns() {
	f.runner.Timeouts.IdleWarning = 10 * time.Second
	f.runner.Timeouts.Idle = 15 * time.Second
}

func skipWithoutGuardProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("guard processes are Linux-only")
	}
}

func slicesContainsNonPositive(pids []int) bool {
	for _, p := range pids {
		if p <= 0 {
			return true
		}
	}
	return false
}

// A stop (context cancelled) reaches the CLI through the guard process, and
// the CLI's own exit status comes back through it.
func TestRunThroughGuardProcessStopAndExitStatus(t *testing.T) {
	skipWithoutGuardProcess(t)
	f := newFixture(t, out(lineInit), out(lineAssistant), "exit 5")
	f.runner.Guard.Mode = procguard.ModeGuardProcess
	res := f.run(SessionState{}, "x")
	if res.ExitCode != 5 || res.KilledByRunner {
		t.Fatalf("res = %+v", res)
	}
	f.setScript("ignore-term", out(lineInit), out(lineAssistant), "hang")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tu := f.turn(SessionState{}, "x")
	tu.OnEvent = func(e Event) {
		if e.Kind == EventAssistantText {
			cancel()
		}
	}
	res, err := f.runner.Run(ctx, tu)
	if err != nil {
		t.Fatal(err)
	}
	assertFailure(t, res, ClassStopped)
	if !res.KilledByRunner || res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Fatalf("res = %+v", res)
	}
}

// The leftover check of one test binary must spare the fake CLIs of every
// other test binary on the machine (another worktree or package running the
// same tests at the same time): it SIGKILLed every process whose
// environment held CURSORFAKE=1, which made concurrent runs kill each
// other's fakes (exit status 137, not killed by the runner).
func TestCheckNoLeftoversSparesForeignFakes(t *testing.T) {
	proctest.SparesForeign(t, []string{fakeEnv + "=1", fakeRunEnv + "=another-test-binary"}, checkNoLeftovers)
}
