//go:build unix

// Package proctest holds the helpers that tests of process-starting code
// share: reading a process's state from /proc (Linux), waiting until
// processes are gone, and checking that a leftover check spares processes
// another test binary started. It imports nothing of this module, so the
// process guard's own in-package tests can use it too.
package proctest

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Stat is the part of /proc/<pid>/stat the tests read.
type Stat struct {
	// State is the one-letter process state ('R', 'S', 'Z', …).
	State byte
	// PPid is the parent's pid.
	PPid int
	// PGid is the process group id.
	PGid int
}

// Dead reports whether the process no longer runs code (a zombie, or a
// task being torn down).
func (s Stat) Dead() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }

// ReadStat reads /proc/<pid>/stat; false when the process does not exist
// (or the line cannot be read). The command name may hold spaces and
// parentheses, so fields are read after the last ')'.
func ReadStat(pid int) (Stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || f[0] == "" {
		return Stat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return Stat{State: f[0][0], PPid: ppid, PGid: pgid}, true
}

// Running reports whether pid names a process that still runs code.
func Running(pid int) bool {
	st, ok := ReadStat(pid)
	return ok && !st.Dead()
}

// AwaitGone waits (as a hang guard only, 10 s) until none of pids runs,
// fails the test for the survivors and kills them, then reaps those that
// were reparented to this process (a subreaper). Pids ≤ 0 are ignored.
func AwaitGone(t testing.TB, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []int
		for _, pid := range pids {
			if pid > 0 && Running(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("survived their host: %v", left)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		var ws syscall.WaitStatus
		for i := 0; i < 500; i++ {
			wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if wpid == pid || err != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// SparesForeign checks that a leftover check spares what it did not start:
// it starts a long sleep whose environment adds env (the marks another test
// binary's children carry), runs check as a subtest, and fails t if the
// sleep no longer runs. The sleep is killed and reaped at the end.
func SparesForeign(t *testing.T, env []string, check func(t *testing.T)) {
	t.Helper()
	foreign := exec.Command("/bin/sleep", "60")
	foreign.Env = append(os.Environ(), env...)
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = foreign.Process.Kill() // our child, not yet waited for: pid stable
		_ = foreign.Wait()
	}()
	t.Run("leftover check", check)
	if !Running(foreign.Process.Pid) {
		t.Fatal("the leftover check killed a process this test binary did not start")
	}
}
