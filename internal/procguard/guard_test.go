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
)

const testMarker = "PROCGUARD_TEST=1"

func TestMain(m *testing.M) {
	if os.Getenv("PROCGUARD_ROLE") == "parent" {
		os.Exit(parentMain())
	}
	if err := EnableChildSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
	os.Exit(m.Run())
}

// parentMain guards a long sleep, prints its pid and waits to be killed.
func parentMain() int {
	cmd := exec.Command("sleep", "300")
	cmd.Env = append(os.Environ(), testMarker)
	p, err := Start(cmd, Options{})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println(p.Pid())
	time.Sleep(time.Hour)
	return 0
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

// Scenario 36: the leader exits 0 leaving a same-group child and a detached
// (setsid) child; both are torn down and reaped, and the exit code is 0.
func TestNaturalExitLeftoversReaped(t *testing.T) {
	checkNoLeftovers(t)
	p, pids := startWithPids(t, `sleep 300 & echo $!; setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; exit 0`, 2, Options{ScanInterval: 10 * time.Millisecond})
	<-p.Exited()
	if code, sig, _ := p.ExitCode(); code != 0 || sig {
		t.Fatalf("exit = %d %t", code, sig)
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
}

// Scenario 33: a stop signal is forwarded to the group; TERM then KILL for
// members ignoring it.
func TestTerminateEscalatesToKill(t *testing.T) {
	checkNoLeftovers(t)
	p, pids := startWithPids(t, `trap "" TERM; sh -c 'trap "" TERM; echo $$; exec sleep 300' & sleep 300 & echo $!; wait`, 2, Options{TermGrace: 100 * time.Millisecond})
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
}

func TestSignalForwarded(t *testing.T) {
	checkNoLeftovers(t)
	p, _ := startWithPids(t, `trap 'exit 143' TERM; echo $$; while :; do sleep 0.05; done`, 1, Options{})
	p.Signal(syscall.SIGTERM)
	<-p.Exited()
	if code, _, _ := p.ExitCode(); code != 143 && code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit = %d", code)
	}
	p.Terminate()
}

// A double fork whose middle exits at once, with periodic snapshots off,
// is still found at teardown through the watched pipe it holds.
func TestDoubleForkOrphanHoldingPipe(t *testing.T) {
	checkNoLeftovers(t)
	p, pids := startWithPids(t, `sh -c 'setsid sh -c "echo \$\$; exec sleep 300" &'; exit 0`, 1, Options{ScanInterval: -1})
	<-p.Exited()
	p.Terminate()
	if running(pids[0]) {
		t.Fatalf("orphan %d survived", pids[0])
	}
}

// Scenario 34 (in-process guard): when the process that started the CLI
// dies, Pdeathsig kills the CLI.
func TestParentDeathKillsChild(t *testing.T) {
	checkNoLeftovers(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self)
	parent.Env = append(os.Environ(), "PROCGUARD_ROLE=parent", testMarker)
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("parent: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("parent printed %q", line)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second) // hang guard only
	for running(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if running(child) {
		_ = syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("child %d survived its parent", child)
	}
	// The dead child was reparented to this subreaper: reap it.
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(child, &ws, 0, nil)
}

// Scenario 35 (in-process guard): spawn failures are reported by Start.
func TestStartFailures(t *testing.T) {
	checkNoLeftovers(t)
	if _, err := Start(exec.Command("/nonexistent/cursor-agent"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing executable: %v", err)
	}
	cmd := shell("exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if _, err := Start(cmd, Options{}); !errors.Is(err, ErrSetsid) {
		t.Fatalf("setsid: %v", err)
	}
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
