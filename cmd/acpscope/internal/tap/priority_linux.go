package tap

import (
	"runtime"
	"syscall"
	"unsafe"
)

// observerNice is the nice value of the observer's thread while it yields
// where the kernel refuses it the idle policy.
const observerNice = 19

// schedIdle is Linux's SCHED_IDLE scheduling policy: a thread that runs
// only on a core no other thread wants, and that any thread waking up on
// its core takes the core from at once. A nice value, even 19, leaves a
// woken thread waiting behind it for up to a time slice: the pumps, woken
// by every pipe read, then move at half their pace.
const schedIdle = 5

// lowerPriority runs the calling goroutine on a thread of its own that
// yields the CPU to every other thread for the rest of its life: the goroutine
// never unlocks it, so the thread ends with the goroutine and runs nothing
// else (an unprivileged thread cannot leave the idle policy). It returns
// what the thread got: "idle", "nice 19" where the idle policy is
// refused, or "" where neither is allowed (a sandbox), which changes
// nothing.
func lowerPriority() string {
	runtime.LockOSThread()
	var param struct{ priority int32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedIdle, uintptr(unsafe.Pointer(&param))); errno == 0 {
		return "idle"
	}
	tid := syscall.Gettid()
	if syscall.Setpriority(syscall.PRIO_PROCESS, tid, observerNice) != nil {
		return ""
	}
	return "nice 19"
}

// threadPolicy is the calling thread's scheduling policy and nice value,
// as lowerPriority names them ("" for the default policy at nice 0).
func threadPolicy() string {
	policy, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	if errno == 0 && policy == schedIdle {
		return "idle"
	}
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err == nil && 20-p == observerNice { // the system call's value is 20 - nice
		return "nice 19"
	}
	return ""
}
