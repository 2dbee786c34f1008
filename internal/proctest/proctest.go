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
	// StartTime is when the process started, in clock ticks after boot: a
	// pid and its start time name one process, even after the pid is reused.
	StartTime uint64
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
	st := Stat{State: f[0][0], PPid: ppid, PGid: pgid}
	if len(f) > 19 { // field 22 of the line, starttime
		st.StartTime, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return st, true
}

// Running reports whether pid names a process that still runs code.
func Running(pid int) bool {
	st, ok := ReadStat(pid)
	return ok && !st.Dead()
}

// AwaitGone waits (as a hang guard only, 10 s) until none of pids runs,
// fails the test for the survivors and kills them, then reaps those that
// were reparented to this process (a subreaper). Pids ≤ 0 are ignored.
// Each pid is taken with its start time when AwaitGone is called, so a pid
// the system reuses for a new process meanwhile counts as gone and is
// never signalled.
func AwaitGone(t testing.TB, pids []int) {
	t.Helper()
	awaitGone(t, identify(pids), 10*time.Second)
}

// process is one process: a pid and its start time.
type process struct {
	pid   int
	start uint64
}

// identify pairs each pid > 0 that exists (running or a zombie) with its
// start time.
func identify(pids []int) []process {
	var procs []process
	for _, pid := range pids {
		if st, ok := ReadStat(pid); ok && pid > 0 {
			procs = append(procs, process{pid, st.StartTime})
		}
	}
	return procs
}

// running reports whether p still runs code (its pid not reused).
func (p process) running() bool {
	st, ok := ReadStat(p.pid)
	return ok && !st.Dead() && st.StartTime == p.start
}

func awaitGone(t testing.TB, procs []process, guard time.Duration) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		var left []process
		for _, p := range procs {
			if p.running() {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var pids []int
			for _, p := range left {
				if p.running() {
					_ = syscall.Kill(p.pid, syscall.SIGKILL)
				}
				pids = append(pids, p.pid)
			}
			t.Errorf("survived their host: %v", pids)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range procs {
		if st, ok := ReadStat(p.pid); !ok || st.StartTime != p.start {
			continue // gone, or the pid names another process now
		}
		var ws syscall.WaitStatus
		for i := 0; i < 500; i++ {
			wpid, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
			if wpid == p.pid || err != nil {
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
