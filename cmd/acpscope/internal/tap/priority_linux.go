package tap

import (
	"runtime"
	"syscall"
)

// observerNice is the scheduling priority (nice value) of the observer's
// thread: the pumps, the editor and the agent come first whenever the CPU
// is short.
const observerNice = 19

// lowerPriority runs the calling goroutine on a thread of its own at
// observerNice for the rest of its life: the goroutine never unlocks it, so
// the thread ends with the goroutine and runs nothing else. A failure (a
// sandbox without setpriority) changes nothing. It returns the thread's
// nice value then.
func lowerPriority() int {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, observerNice)
	return threadNice()
}

// threadNice is the calling thread's nice value.
func threadNice() int {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		return 0
	}
	return 20 - p // the system call's value is 20 - nice
}
