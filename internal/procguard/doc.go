// Package procguard runs one child process so that nothing it starts can
// outlive it unnoticed. The child gets its own process group, a closed stdin
// unless the caller provides one, SIGKILL on the death of the thread that
// started it (Pdeathsig), and a per-process token in its environment. While
// it runs, a scanner remembers every descendant it sees in /proc (the ppid
// closure plus the group). Teardown sends SIGTERM, then SIGKILL after a
// grace, to the group and to every remembered or newly found descendant,
// including ones that called setsid and whose parent already exited (found
// by the token in their environment or because they hold one of the watched
// pipes), and returns only once all of them have stopped running and the
// child has been waited for.
//
// The guard lives in the calling process rather than in a helper binary: a
// library cannot rely on its host shipping a re-executable guard command.
// See adapter/cursor/cli/README.md for what that leaves uncovered.
//
// The full guard is Linux-only. On other systems a reduced guard keeps the
// same API so that programs still build and run: the child gets its own
// process group where the system has one, and teardown signals that group
// (TERM, then KILL), without descendant tracking, Pdeathsig or reaping of
// processes that left the group.
package procguard
