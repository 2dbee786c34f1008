// Package procguard runs one child process so that nothing it starts can
// outlive it unnoticed. The child gets its own process group, a closed stdin
// unless the caller provides one, SIGKILL on the death of the thread that
// started it (Pdeathsig), and a per-process token in its environment. While
// it runs, a scanner remembers every descendant it sees in /proc (the ppid
// closure plus the group). Teardown sends SIGTERM, then SIGKILL after a
// grace, to the group and to every remembered or newly found descendant,
// including ones that called setsid and whose parent already exited (found
// by the token in their environment or because they hold one of the watched
// pipes open for writing), and returns only once all of them have stopped running and the
// child has been waited for.
//
// # Where the guard runs
//
// By default the guard runs inside the calling (host) process. That needs
// nothing from the host, but if the host is SIGKILLed, Pdeathsig kills only
// the direct child: its descendants survive.
//
// A program that calls EnableGuardProcess first thing in main opts into
// guard processes: with Options.Mode left at ModeAuto, Start then re-executes
// the program (/proc/self/exe) as a guard process, which starts the child
// under the same in-process guard code, with the host's stdio, directory,
// environment and extra files passed through. The guard is a child
// subreaper and watches its host three ways: EOF on a control pipe only the
// host holds, getppid() polled every 20 ms, and Pdeathsig (SIGTERM) on
// itself. When the host dies, when the host asks (Terminate, Kill), or on
// SIGTERM, SIGINT or SIGHUP, it tears the whole tree down and exits. The
// host-side API (Signal, Terminate, Kill, Exited, ExitCode,
// SignalledBeforeExit) behaves the same in both modes; Pid is the child's
// pid, GuardPid the guard's. If the guard itself is killed, the child dies
// of its Pdeathsig and the host tears the rest down itself (found by group,
// token and pipes; ExitCode reports ErrGuardLost). ModeInProcess and
// ModeGuardProcess force a mode. Without a readable /proc/self/exe the
// opt-in has no effect. The guard process costs one extra exec per child.
//
// What stays out of reach in both modes: processes a separate daemon starts
// for the child; descendants that both leave the group and clear the token
// from their environment and hold no watched pipe, when a snapshot missed
// them; a fork bomb that outruns the bounded SIGKILL rounds; the tiny
// pid-reuse window of start-time fencing (no pidfds). A guard process that
// is SIGKILLed together with its host (for example by an OOM kill of the
// whole cgroup) cannot tear anything down.
//
// The full guard is Linux-only. On other systems a reduced guard keeps the
// same API so that programs still build and run: the child gets its own
// process group where the system has one, and teardown signals that group
// (TERM, then KILL), without descendant tracking, Pdeathsig, guard processes
// or reaping of processes that left the group.
package procguard
