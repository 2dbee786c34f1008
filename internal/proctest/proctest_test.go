//go:build linux

package proctest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// A pid whose start time no longer matches names another process (the pid
// was reused): AwaitGone must count it gone at once and never signal it.
// Here the "reused" pid is this test process itself, taken with a wrong
// start time: before start times were kept, AwaitGone waited out its guard
// and then sent SIGKILL to it.
func TestAwaitGoneSparesReusedPid(t *testing.T) {
	st, ok := ReadStat(os.Getpid())
	if !ok || st.StartTime == 0 {
		t.Fatalf("no start time for this process: %+v", st)
	}
	ft := &failRecorder{TB: t}
	awaitGone(ft, []process{{pid: os.Getpid(), start: st.StartTime + 1}}, time.Second)
	if ft.failed {
		t.Fatal("a reused pid was reported as a survivor")
	}
}

// A child that exits is found gone and reaped; one that keeps running past
// the guard is reported and killed.
func TestAwaitGoneReapsAndKills(t *testing.T) {
	quick := exec.Command("true")
	slow := exec.Command("sleep", "30")
	if err := quick.Start(); err != nil {
		t.Fatal(err)
	}
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	ft := &failRecorder{TB: t}
	awaitGone(ft, identify([]int{quick.Process.Pid, slow.Process.Pid}), 200*time.Millisecond)
	if !ft.failed {
		t.Fatal("the running sleep was not reported")
	}
	for _, pid := range []int{quick.Process.Pid, slow.Process.Pid} {
		if _, ok := ReadStat(pid); ok {
			t.Fatalf("pid %d still exists (not killed or not reaped)", pid)
		}
	}
}

// failRecorder records Errorf instead of failing the real test.
type failRecorder struct {
	testing.TB
	failed bool
}

func (f *failRecorder) Errorf(string, ...any) { f.failed = true }
func (f *failRecorder) Helper()               {}
