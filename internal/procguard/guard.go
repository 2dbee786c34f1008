//go:build linux

package procguard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Process is a started, guarded child. Its guard runs either in the calling
// process or in a separate guard process (see Mode); the methods behave the
// same in both cases.
type Process struct {
	pid    int
	exited chan struct{}
	local  *local  // ModeInProcess
	remote *remote // ModeGuardProcess
}

// local is a child guarded by the calling process.
type local struct {
	cmd  *exec.Cmd
	opt  Options
	tree *tree

	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error

	stopScan chan struct{}
	scanDone chan struct{}

	teardownOnce sync.Once
}

// tree is what a guard knows about a child and its descendants, and how it
// finds and signals them.
type tree struct {
	leader identity
	// skip are pids that are never targets: the guard itself and, in a
	// guard process, the host (which holds the watched pipes).
	skip  [2]int
	token []byte
	pipes map[string]bool
	// leaderUnreaped reports whether the leader's pid (and so its group id)
	// cannot have been recycled, which makes signalling the group safe.
	leaderUnreaped func() bool

	mu         sync.Mutex
	remembered map[identity]bool
	signalled  bool // a signal was sent while the leader was unreaped
}

// Start starts cmd under the guard. The command must not have been started.
// With a guard process, cmd is rewritten to run the guard (its Path, Args,
// Env and ExtraFiles change, and its SysProcAttr applies to the guard); the
// child gets cmd's original command, environment, directory and stdio.
func Start(cmd *exec.Cmd, opt Options) (*Process, error) {
	opt = opt.withDefaults()
	switch opt.Mode {
	case ModeAuto:
		if guardEnabled.Load() {
			return startRemote(cmd, opt)
		}
	case ModeInProcess:
	case ModeGuardProcess:
		if !guardEnabled.Load() {
			return nil, ErrGuardNotEnabled
		}
		return startRemote(cmd, opt)
	default:
		return nil, fmt.Errorf("procguard: unknown Mode %d", opt.Mode)
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	l, err := startLocal(cmd, opt, token, pipeIDs(opt.WatchFiles), 0)
	if err != nil {
		return nil, err
	}
	return &Process{pid: l.tree.leader.pid, exited: l.exited, local: l}, nil
}

func newToken() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("procguard: token: %w", err)
	}
	return TokenEnv + "=" + hex.EncodeToString(raw[:]), nil
}

// pipeIDs names the pipes among files in readlink form ("pipe:[ino]").
func pipeIDs(files []*os.File) map[string]bool {
	ids := map[string]bool{}
	for _, f := range files {
		if f == nil {
			continue
		}
		// Not f.Fd(): it would switch the pipe to blocking mode, and a
		// blocked Read could then no longer be interrupted by Close.
		rc, err := f.SyscallConn()
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = syscall.Fstat(int(fd), &st) }); err == nil && serr == nil &&
			st.Mode&syscall.S_IFMT == syscall.S_IFIFO {
			ids["pipe:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		}
	}
	return ids
}

// prepare gives cmd its own process group, deathSig on the death of the
// thread that starts it, and a WaitDelay.
func prepare(cmd *exec.Cmd, opt Options, deathSig syscall.Signal) error {
	if err := ownGroup(cmd); err != nil {
		return err
	}
	cmd.SysProcAttr.Pdeathsig = deathSig
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = opt.WaitDelay
	}
	return nil
}

// withEnv returns cmd's environment (the caller's when nil) plus kv.
func withEnv(cmd *exec.Cmd, kv ...string) []string {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	return append(env[:len(env):len(env)], kv...)
}

// startPinned starts cmd and waits for it on a goroutine locked to its OS
// thread: Pdeathsig fires when the *thread* that forked the child exits, and
// the Go runtime may retire threads. The thread only exits (the goroutine
// returns still locked) once the child has been reaped; then *waitErr is set
// and done closed.
func startPinned(cmd *exec.Cmd, done chan<- struct{}, waitErr *error) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		started <- nil
		*waitErr = cmd.Wait()
		close(done)
	}()
	return <-started
}

// startLocal starts cmd guarded by the calling process. host, when not 0, is
// a pid that is never a target (a guard process's host).
func startLocal(cmd *exec.Cmd, opt Options, token string, pipes map[string]bool, host int) (*local, error) {
	if err := prepare(cmd, opt, syscall.SIGKILL); err != nil {
		return nil, err
	}
	cmd.Env = withEnv(cmd, token)
	l := &local{
		cmd:      cmd,
		opt:      opt,
		exited:   make(chan struct{}),
		stopScan: make(chan struct{}),
		scanDone: make(chan struct{}),
	}
	l.tree = &tree{
		skip:       [2]int{os.Getpid(), host},
		token:      []byte(token),
		pipes:      pipes,
		remembered: map[identity]bool{},
		leaderUnreaped: func() bool {
			select {
			case <-l.exited:
				return false
			default:
				return true
			}
		},
	}
	if err := startPinned(cmd, l.exited, &l.waitErr); err != nil {
		return nil, err
	}
	l.tree.leader = identity{pid: cmd.Process.Pid}
	if e, ok := readStat(l.tree.leader.pid); ok {
		l.tree.leader.startTime = e.startTime
	}
	if opt.ScanInterval > 0 {
		go l.scanLoop()
	} else {
		close(l.scanDone)
	}
	return l, nil
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// GuardPid is the pid of the guard process, or 0 when the guard runs in the
// calling process.
func (p *Process) GuardPid() int {
	if p.remote != nil {
		return p.remote.cmd.Process.Pid
	}
	return 0
}

// Exited is closed once the child has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitCode reports how the child ended, after Exited is closed: its exit
// status, or 128+N when signal N killed it (signaled is then true). err
// reports trouble beyond the exit status, never an *exec.ExitError: with the
// guard in this process, a non-exit error of exec.Cmd.Wait
// (exec.ErrWaitDelay when only I/O was stuck); with a guard process,
// ErrGuardLost when the guard died before finishing (the child then counts
// as killed by SIGKILL, which Pdeathsig sent it).
func (p *Process) ExitCode() (code int, signaled bool, err error) {
	<-p.exited
	if p.remote != nil {
		return p.remote.exitCode()
	}
	err = p.local.waitErr
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = nil
	}
	st := p.local.cmd.ProcessState
	if st == nil {
		return -1, false, err
	}
	return statusCode(st), statusSignaled(st), err
}

func statusSignaled(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

func statusCode(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// SignalledBeforeExit reports whether the guard sent a signal while the child
// was still running, i.e. whether its exit was caused by the guard.
func (p *Process) SignalledBeforeExit() bool {
	if p.remote != nil {
		return p.remote.signalledBeforeExit()
	}
	return p.local.tree.wasSignalled()
}

// Signal forwards sig to the child's process group and to every remembered
// descendant that left it. It does not wait.
func (p *Process) Signal(sig syscall.Signal) {
	if p.remote != nil {
		p.remote.signal(sig)
		return
	}
	p.local.tree.signalTargets(p.local.tree.collect(false), sig)
}

// Terminate stops the child and all its descendants: SIGTERM, then SIGKILL
// after the grace, then waits until none of them runs and the child has been
// reaped. It is safe to call more than once and after the child exited, and
// is what a caller must do at the end of every run (after a natural exit it
// tears down whatever the child left behind).
func (p *Process) Terminate() { p.stop(true) }

// Kill is Terminate without the SIGTERM phase.
func (p *Process) Kill() { p.stop(false) }

func (p *Process) stop(term bool) {
	if p.remote != nil {
		p.remote.stop(term)
	} else {
		p.local.stop(term)
	}
	<-p.exited
}

func (l *local) stop(term bool) {
	l.teardownOnce.Do(func() { l.teardown(term) })
	<-l.exited
}

func (l *local) scanLoop() {
	defer close(l.scanDone)
	t := time.NewTicker(l.opt.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stopScan:
			return
		case <-t.C:
			l.tree.collect(false)
		}
	}
}

func (t *tree) wasSignalled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.signalled
}

func (t *tree) skipped(pid int) bool { return pid <= 1 || pid == t.skip[0] || pid == t.skip[1] }

// collect scans /proc and returns the live descendants: the ppid closure
// from the child and every remembered process, the members of the child's
// group, and with deep set, holders of the token or writers of a watched
// pipe (and their closure). Everything found is remembered.
func (t *tree) collect(deep bool) []identity {
	snap := snapshot()
	byPid := make(map[int]procEntry, len(snap))
	children := make(map[int][]int, len(snap))
	for _, e := range snap {
		byPid[e.pid] = e
		children[e.ppid] = append(children[e.ppid], e.pid)
	}
	found := map[int]bool{}
	var queue []int
	add := func(pid int) {
		if t.skipped(pid) || found[pid] {
			return
		}
		found[pid] = true
		queue = append(queue, pid)
	}
	// Roots are only trusted while the pid still names the same process.
	leader, leaderSeen := byPid[t.leader.pid]
	if leaderSeen && leader.startTime == t.leader.startTime {
		add(t.leader.pid)
	}
	t.mu.Lock()
	for id := range t.remembered {
		if e, ok := byPid[id.pid]; ok && e.startTime == id.startTime {
			add(id.pid)
		}
	}
	t.mu.Unlock()
	// The group id is the leader's pid; if another process now has that
	// pid, every old member is gone and the group is someone else's.
	if !leaderSeen || leader.startTime == t.leader.startTime {
		for _, e := range snap {
			if e.pgid == t.leader.pid {
				add(e.pid)
			}
		}
	}
	if deep {
		for _, e := range snap {
			if found[e.pid] || t.skipped(e.pid) || e.dead() {
				continue
			}
			if environHas(e.pid, t.token) || holdsAny(e.pid, t.pipes) {
				add(e.pid)
			}
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			add(c)
		}
	}
	out := make([]identity, 0, len(found))
	t.mu.Lock()
	for pid := range found {
		e := byPid[pid]
		id := identity{pid: pid, startTime: e.startTime}
		if pid != t.leader.pid && len(t.remembered) < maxRemembered {
			t.remembered[id] = true
		}
		if !e.dead() {
			out = append(out, id)
		}
	}
	t.mu.Unlock()
	return out
}

// signalTargets sends sig to the group (while the leader is unreaped, so the
// group id cannot have been recycled) and to each target, fenced on its
// start time.
func (t *tree) signalTargets(targets []identity, sig syscall.Signal) {
	if t.leaderUnreaped() {
		t.mu.Lock()
		t.signalled = true
		t.mu.Unlock()
		_ = syscall.Kill(-t.leader.pid, sig)
	}
	for _, id := range targets {
		if alive(id) {
			_ = syscall.Kill(id.pid, sig)
		}
	}
}

// killAll sends SIGKILL in rounds, rescanning each time so a process forked
// during the previous round is caught too, until none runs. Bounded; a fork
// bomb can outrun it.
func (t *tree) killAll() {
	for round := 0; round < 50; round++ {
		targets := t.collect(true)
		if len(targets) == 0 {
			return
		}
		t.signalTargets(targets, syscall.SIGKILL)
		waitGone(targets, time.Second)
	}
}

// waitGone polls until none of targets runs or d elapsed; it reports the
// ones still running.
func waitGone(targets []identity, d time.Duration) []identity {
	deadline := time.Now().Add(d)
	for {
		var left []identity
		for _, id := range targets {
			if alive(id) {
				left = append(left, id)
			}
		}
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *local) teardown(term bool) {
	close(l.stopScan)
	<-l.scanDone
	targets := l.tree.collect(true)
	if term && len(targets) > 0 {
		l.tree.signalTargets(targets, syscall.SIGTERM)
		// New forks during the grace are caught by the rescans below.
		waitGone(targets, l.opt.TermGrace)
	}
	l.tree.killAll()
	// The direct child is dead now; its Wait returns (WaitDelay bounds any
	// stuck stdin copy).
	<-l.exited
	l.reapOrphans()
}

// reapOrphans waits for remembered descendants that were reparented to this
// process because it is a child subreaper (see EnableChildSubreaper), and
// for zombies of the child's group that ended up here. It only ever waits by
// pid for processes the guard knows to be its own, so it never steals an
// exit status another part of the program waits for.
func (l *local) reapOrphans() {
	if !isSubreaper() {
		return
	}
	t := l.tree
	t.mu.Lock()
	known := make(map[identity]bool, len(t.remembered))
	for id := range t.remembered {
		known[id] = true
	}
	t.mu.Unlock()
	self := os.Getpid()
	for _, e := range snapshot() {
		if e.ppid != self || e.pid == t.leader.pid {
			continue
		}
		if known[identity{pid: e.pid, startTime: e.startTime}] || e.pgid == t.leader.pid {
			var ws syscall.WaitStatus
			for i := 0; i < 200; i++ {
				wpid, err := syscall.Wait4(e.pid, &ws, syscall.WNOHANG, nil)
				if wpid == e.pid || err != nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
}

// prctl option numbers from <linux/prctl.h>.
const (
	prSetChildSubreaper = 36
	prGetChildSubreaper = 37
)

// EnableChildSubreaper marks the calling process as a child subreaper
// (Linux 3.4+): orphaned descendants of guarded children are reparented to it
// instead of to init, so the guard can reap them after killing them. It is a
// process-wide setting: orphans of every other subsystem are reparented here
// too and stay zombies unless someone waits for them. Opt in only when the
// host owns all its children; without it, killed orphans are reaped by init.
// A guard process (see EnableGuardProcess) always is a subreaper.
func EnableChildSubreaper() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return fmt.Errorf("procguard: PR_SET_CHILD_SUBREAPER: %w", e)
	}
	return nil
}

func isSubreaper() bool {
	var v int32
	_, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&v)), 0)
	return e == 0 && v != 0
}
