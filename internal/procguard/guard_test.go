//go:build linux

package procguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/proctest"
)

// testMarker is the environment entry of every process these tests start
// (inherited by their descendants). It names this test process alone, so the
// leftover check never touches the processes of another test binary running
// the same tests at the same time.
var testMarker = fmt.Sprintf("PROCGUARD_TEST=%d-%d", os.Getpid(), time.Now().UnixNano())

func TestMain(m *testing.M) {
	EnableGuardProcess()
	// The race runtime sleeps a second at exit by default: guards would too.
	if os.Getenv("GORACE") == "" {
		_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	if os.Getenv("PROCGUARD_ROLE") == "parent" {
		os.Exit(parentMain())
	}
	if err := EnableChildSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
	os.Exit(m.Run())
}

// parentMain is a host that guards PROCGUARD_SCRIPT in PROCGUARD_MODE,
// prints "GUARDPID CHILDPID PIDS…" (PIDS being the first
// PROCGUARD_PIDS lines the script prints) and waits to be killed.
func parentMain() int {
	mode := ModeInProcess
	if os.Getenv("PROCGUARD_MODE") == "guard" {
		mode = ModeGuardProcess
	}
	n, _ := strconv.Atoi(os.Getenv("PROCGUARD_PIDS"))
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	cmd := shell(os.Getenv("PROCGUARD_SCRIPT"))
	cmd.Stdout = w
	p, err := Start(cmd, Options{Mode: mode, WatchFiles: []*os.File{r}, ScanInterval: 10 * time.Millisecond})
	w.Close()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	line := []string{strconv.Itoa(p.GuardPid()), strconv.Itoa(p.Pid())}
	sc := bufio.NewScanner(r)
	for len(line) < n+2 && sc.Scan() {
		line = append(line, strings.TrimSpace(sc.Text()))
	}
	fmt.Println(strings.Join(line, " "))
	time.Sleep(time.Hour)
	return 0
}

// modes runs f once with the guard in this process and once with a guard
// process.
func modes(t *testing.T, f func(t *testing.T, mode Mode)) {
	t.Run("in-process", func(t *testing.T) { f(t, ModeInProcess) })
	t.Run("guard-process", func(t *testing.T) { f(t, ModeGuardProcess) })
}

// checkNoLeftovers asserts that no marked process runs and no zombie child
// remains once the test ends.
func checkNoLeftovers(t *testing.T) {
	t.Cleanup(func() {
		marker := []byte(testMarker)
		var left []string
		deadline := time.Now().Add(5 * time.Second) // hang guard only
		for {
			left = left[:0]
			for _, e := range snapshot() {
				if e.pid == os.Getpid() {
					continue
				}
				if e.dead() && e.ppid == os.Getpid() {
					left = append(left, fmt.Sprintf("zombie %d", e.pid))
				} else if !e.dead() && environHas(e.pid, marker) {
					left = append(left, fmt.Sprintf("live %d", e.pid))
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("left behind: %v", left)
			for _, e := range snapshot() {
				if !e.dead() && environHas(e.pid, marker) {
					_ = syscall.Kill(e.pid, syscall.SIGKILL)
				}
			}
		}
	})
}

func shell(script string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), testMarker)
	return cmd
}

// pidsFrom reads n pids the script prints on stdout.
func startWithPids(t *testing.T, script string, n int, opt Options) (*Process, []int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := shell(script)
	cmd.Stdout = w
	opt.WatchFiles = append(opt.WatchFiles, r)
	p, err := Start(cmd, opt)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(r)
	for len(pids) < n && sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatalf("script printed %q", sc.Text())
		}
		pids = append(pids, pid)
	}
	if len(pids) != n {
		p.Kill()
		t.Fatalf("got pids %v", pids)
	}
	return p, pids
}

func running(pid int) bool {
	e, ok := readStat(pid)
	return ok && !e.dead()
}

// docs/cursor-cli.md#scenario-36: the leader exits 0 leaving a same-group child and a detached
// (setsid) child; both are torn down and reaped, and the exit code is 0.
func TestNaturalExitLeftoversReaped(t *testing.T) {
	modes(t, func(t *testing.T, mode Mode) {
		checkNoLeftovers(t)
		p, pids := startWithPids(t, `sleep 300 & echo $!; setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; exit 0`, 2, Options{Mode: mode, ScanInterval: 10 * time.Millisecond})
		<-p.Exited()
		if code, sig, err := p.ExitCode(); code != 0 || sig || err != nil {
			t.Fatalf("exit = %d %t %v", code, sig, err)
		}
		p.Terminate()
		for _, pid := range pids {
			if running(pid) {
				t.Errorf("pid %d survived", pid)
			}
		}
		if p.SignalledBeforeExit() {
			t.Error("natural exit reported as caused by the guard")
		}
	})
}

// docs/cursor-cli.md#scenario-33: a stop signal is forwarded to the group; TERM then KILL for
// members ignoring it.
func TestTerminateEscalatesToKill(t *testing.T) {
	modes(t, func(t *testing.T, mode Mode) {
		checkNoLeftovers(t)
		p, pids := startWithPids(t, `trap "" TERM; sh -c 'trap "" TERM; echo $$; exec sleep 300' & sleep 300 & echo $!; wait`, 2, Options{Mode: mode, TermGrace: 100 * time.Millisecond})
		p.Terminate()
		code, sig, _ := p.ExitCode()
		if !sig || code != 128+int(syscall.SIGKILL) || !p.SignalledBeforeExit() {
			t.Fatalf("exit = %d signaled=%t", code, sig)
		}
		for _, pid := range pids {
			if running(pid) {
				t.Errorf("pid %d survived", pid)
			}
		}
	})
}

func TestSignalForwarded(t *testing.T) {
	modes(t, func(t *testing.T, mode Mode) {
		checkNoLeftovers(t)
		p, _ := startWithPids(t, `trap 'exit 143' TERM; echo $$; while :; do sleep 0.05; done`, 1, Options{Mode: mode})
		p.Signal(syscall.SIGTERM)
		<-p.Exited()
		if code, _, _ := p.ExitCode(); code != 143 && code != 128+int(syscall.SIGTERM) {
			t.Fatalf("exit = %d", code)
		}
		if !p.SignalledBeforeExit() {
			t.Error("forwarded signal not recorded")
		}
		p.Terminate()
	})
}

// The child's exit status, or the signal that killed it, reaches the host
// unchanged.
func TestExitStatusPropagated(t *testing.T) {
	modes(t, func(t *testing.T, mode Mode) {
		checkNoLeftovers(t)
		for _, tc := range []struct {
			script string
			code   int
			sig    bool
		}{
			{`echo $$; exit 7`, 7, false},
			{`echo $$; kill -USR1 $$`, 128 + int(syscall.SIGUSR1), true},
		} {
			p, _ := startWithPids(t, tc.script, 1, Options{Mode: mode})
			<-p.Exited()
			code, sig, err := p.ExitCode()
			p.Terminate()
			if code != tc.code || sig != tc.sig || err != nil {
				t.Errorf("%s: exit = %d %t %v, want %d %t", tc.script, code, sig, err, tc.code, tc.sig)
			}
			if p.SignalledBeforeExit() {
				t.Errorf("%s: reported as caused by the guard", tc.script)
			}
		}
	})
}

// A double fork whose middle exits at once, with periodic snapshots off,
// is still found at teardown through the watched pipe it holds.
func TestDoubleForkOrphanHoldingPipe(t *testing.T) {
	modes(t, func(t *testing.T, mode Mode) {
		checkNoLeftovers(t)
		p, pids := startWithPids(t, `sh -c 'setsid sh -c "echo \$\$; exec sleep 300" &'; exit 0`, 1, Options{Mode: mode, ScanInterval: -1})
		<-p.Exited()
		p.Terminate()
		if running(pids[0]) {
			t.Fatalf("orphan %d survived", pids[0])
		}
	})
}

// startParent starts a host process (this test binary) that guards script
// in the given mode, and returns it with the pids it printed: the guard's
// (0 in-process), the child's, and n more printed by the script.
func startParent(t *testing.T, mode, script string, n int) (*exec.Cmd, []int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self)
	parent.Env = append(os.Environ(), "PROCGUARD_ROLE=parent", testMarker, "PROCGUARD_MODE="+mode,
		"PROCGUARD_SCRIPT="+script, "PROCGUARD_PIDS="+strconv.Itoa(n))
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, perr := strconv.Atoi(f)
		if perr != nil {
			err = fmt.Errorf("parent printed %q", line)
			break
		}
		pids = append(pids, pid)
	}
	if err == nil && len(pids) != n+2 {
		err = fmt.Errorf("parent printed %q", line)
	}
	if err != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("parent: %v", err)
	}
	return parent, pids
}

// docs/cursor-cli.md#scenario-34 (in-process guard): when the process that started the CLI
// dies, Pdeathsig kills the CLI.
func TestParentDeathKillsChild(t *testing.T) {
	checkNoLeftovers(t)
	parent, pids := startParent(t, "inproc", "exec sleep 300", 0)
	_ = parent.Process.Kill()
	_ = parent.Wait()
	proctest.AwaitGone(t, pids[1:])
}

// docs/cursor-cli.md#scenario-34 (guard process): when the host is SIGKILLed, the guard notices
// and tears down the CLI, a grandchild in its group and a detached (setsid)
// grandchild, both holding the CLI's stdout, then exits.
func TestHostKilledGuardTearsDownTree(t *testing.T) {
	checkNoLeftovers(t)
	parent, pids := startParent(t, "guard",
		`sleep 300 & echo $!; setsid sh -c 'trap "" TERM; exec sleep 300' & echo $!; exec sleep 300`, 2)
	if pids[0] <= 0 || pids[0] == pids[1] {
		t.Fatalf("no guard process: %v", pids)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	proctest.AwaitGone(t, pids)
}

// docs/cursor-cli.md#scenario-33 (guard process): a stop signal sent to the guard itself tears
// the tree down; the host sees the child's end and ErrGuardLost is not
// reported.
func TestGuardStopSignal(t *testing.T) {
	checkNoLeftovers(t)
	p, pids := startWithPids(t, `setsid sleep 300 & echo $!; exec sleep 300`, 1, Options{Mode: ModeGuardProcess, TermGrace: 100 * time.Millisecond})
	if err := syscall.Kill(p.GuardPid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	p.Terminate()
	code, sig, err := p.ExitCode()
	if code != 128+int(syscall.SIGTERM) || !sig || err != nil || !p.SignalledBeforeExit() {
		t.Fatalf("exit = %d %t %v", code, sig, err)
	}
	if running(pids[0]) || running(p.Pid()) {
		t.Fatal("tree survived the guard's stop")
	}
}

// A guard process killed outright: the child dies of Pdeathsig and the host
// tears down what is left itself.
func TestGuardKilledHostBackstop(t *testing.T) {
	checkNoLeftovers(t)
	p, pids := startWithPids(t, `setsid sleep 300 & echo $!; exec sleep 300`, 1, Options{Mode: ModeGuardProcess})
	if err := syscall.Kill(p.GuardPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	p.Terminate()
	if _, _, err := p.ExitCode(); !errors.Is(err, ErrGuardLost) {
		t.Fatalf("err = %v", err)
	}
	proctest.AwaitGone(t, []int{pids[0], p.Pid()})
}

// docs/cursor-cli.md#scenario-35: spawn failures are reported by Start.
func TestStartFailures(t *testing.T) {
	modes(t, func(t *testing.T, mode Mode) {
		checkNoLeftovers(t)
		if _, err := Start(exec.Command("/nonexistent/cursor-agent"), Options{Mode: mode}); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing executable: %v", err)
		}
		cmd := shell("exit 0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if _, err := Start(cmd, Options{Mode: mode}); !errors.Is(err, ErrSetsid) {
			t.Fatalf("setsid: %v", err)
		}
	})
	guardEnabled.Store(false)
	defer guardEnabled.Store(true)
	if _, err := Start(shell("exit 0"), Options{Mode: ModeGuardProcess}); !errors.Is(err, ErrGuardNotEnabled) {
		t.Fatalf("not enabled: %v", err)
	}
	p, err := Start(shell("exit 0"), Options{})
	if err != nil || p.GuardPid() != 0 {
		t.Fatalf("auto without opt-in: %v guard=%d", err, p.GuardPid())
	}
	p.Terminate()
}

func TestParseStatOddComm(t *testing.T) {
	line := []byte("42 (a) b) (c) S 7 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 123456 1000 10 18446744073709551615")
	e, ok := parseStat(42, line)
	if !ok || e.ppid != 7 || e.pgid != 42 || e.sid != 42 || e.startTime != 123456 || e.state != 'S' {
		t.Fatalf("parsed %+v ok=%t", e, ok)
	}
	if _, ok := parseStat(1, []byte("garbage")); ok {
		t.Fatal("garbage parsed")
	}
	if !bytes.Contains([]byte(TokenEnv), []byte("GUARD")) {
		t.Fatal("token name")
	}
}

// BenchmarkStartTerminate measures the cost of guarding one short-lived
// child in each mode (the guard process adds an exec of this binary).
func BenchmarkStartTerminate(b *testing.B) {
	for _, m := range []struct {
		name string
		mode Mode
	}{{"in-process", ModeInProcess}, {"guard-process", ModeGuardProcess}} {
		b.Run(m.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p, err := Start(exec.Command("/bin/true"), Options{Mode: m.mode})
				if err != nil {
					b.Fatal(err)
				}
				<-p.Exited()
				p.Terminate()
			}
		})
	}
}

// The leftover check must spare the processes of every other test binary
// running these tests at the same time (another package or checkout): it
// killed every process whose environment held PROCGUARD_TEST=1.
func TestCheckNoLeftoversSparesForeignProcesses(t *testing.T) {
	proctest.SparesForeign(t, []string{"PROCGUARD_TEST=1"}, checkNoLeftovers)
}

// A watched pipe's read end is the host's: a process that holds only that
// end is not a descendant of the child. It is a consumer the host started
// itself, or any process the host forks while the teardown scans (until its
// exec, a fork holds all the host's descriptors; the kill then lands on
// what it executed, e.g. another guarded child). Teardown must spare it.
func TestTeardownSparesReadersOfWatchedPipes(t *testing.T) {
	modes(t, func(t *testing.T, mode Mode) {
		checkNoLeftovers(t)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cmd := shell(`echo started; exec sleep 300`)
		cmd.Stdout = w
		p, err := Start(cmd, Options{Mode: mode, WatchFiles: []*os.File{r}})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		reader := exec.Command("/bin/sleep", "300")
		reader.ExtraFiles = []*os.File{r}
		if err := reader.Start(); err != nil {
			p.Kill()
			t.Fatal(err)
		}
		defer func() {
			_ = reader.Process.Kill() // our child, not yet waited for: pid stable
			_ = reader.Wait()
		}()
		if line, _ := bufio.NewReader(r).ReadString('\n'); line != "started\n" {
			t.Errorf("child printed %q", line)
		}
		p.Terminate()
		if !running(reader.Process.Pid) {
			t.Fatal("teardown killed a process that only reads the watched pipe")
		}
	})
}
