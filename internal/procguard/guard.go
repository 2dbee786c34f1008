//go:build linux

package procguard

import (
	"crypto/rand"
	"encoding/hex"
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

// Process is a started, guarded child.
type Process struct {
	cmd    *exec.Cmd
	opt    Options
	pid    int
	leader identity
	token  []byte
	pipes  map[string]bool
	self   int

	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error

	stopScan chan struct{}
	scanDone chan struct{}

	mu         sync.Mutex
	remembered map[identity]bool
	signalled  bool // a signal was sent before the child exited

	teardownOnce sync.Once
}

// Start starts cmd under the guard. The command must not have been started.
func Start(cmd *exec.Cmd, opt Options) (*Process, error) {
	opt = opt.withDefaults()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Setsid {
		return nil, ErrSetsid
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = opt.WaitDelay
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("procguard: token: %w", err)
	}
	token := TokenEnv + "=" + hex.EncodeToString(raw[:])
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], token)

	p := &Process{
		cmd:        cmd,
		opt:        opt,
		token:      []byte(token),
		pipes:      map[string]bool{},
		self:       os.Getpid(),
		exited:     make(chan struct{}),
		stopScan:   make(chan struct{}),
		scanDone:   make(chan struct{}),
		remembered: map[identity]bool{},
	}
	for _, f := range opt.WatchFiles {
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
			p.pipes["pipe:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		}
	}
	// Pdeathsig fires when the *thread* that forked the child exits, and the
	// Go runtime may retire threads. The child is therefore started and
	// waited for on a goroutine locked to its thread for the child's whole
	// life; the thread only exits (the goroutine returns still locked) once
	// the child has been reaped.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	p.pid = cmd.Process.Pid
	p.leader = identity{pid: p.pid}
	if e, ok := readStat(p.pid); ok {
		p.leader.startTime = e.startTime
	}
	if opt.ScanInterval > 0 {
		go p.scanLoop()
	} else {
		close(p.scanDone)
	}
	return p, nil
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Exited is closed once the child has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitCode reports how the child ended, after Exited is closed: its exit
// status, or 128+N when signal N killed it (signaled is then true). err is
// what exec.Cmd.Wait returned (exec.ErrWaitDelay when only I/O was stuck).
func (p *Process) ExitCode() (code int, signaled bool, err error) {
	<-p.exited
	st := p.cmd.ProcessState
	if st == nil {
		return -1, false, p.waitErr
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), true, p.waitErr
	}
	return st.ExitCode(), false, p.waitErr
}

// SignalledBeforeExit reports whether the guard sent a signal while the child
// was still running, i.e. whether its exit was caused by the guard.
func (p *Process) SignalledBeforeExit() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signalled
}

// Signal forwards sig to the child's process group and to every remembered
// descendant that left it. It does not wait.
func (p *Process) Signal(sig syscall.Signal) {
	p.signalTargets(p.collect(false), sig)
}

// Terminate stops the child and all its descendants: SIGTERM, then SIGKILL
// after the grace, then waits until none of them runs and the child has been
// reaped. It is safe to call more than once and after the child exited, and
// is what a caller must do at the end of every run (after a natural exit it
// tears down whatever the child left behind).
func (p *Process) Terminate() {
	p.teardownOnce.Do(func() { p.teardown(true) })
	<-p.exited
}

// Kill is Terminate without the SIGTERM phase.
func (p *Process) Kill() {
	p.teardownOnce.Do(func() { p.teardown(false) })
	<-p.exited
}

func (p *Process) scanLoop() {
	defer close(p.scanDone)
	t := time.NewTicker(p.opt.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stopScan:
			return
		case <-t.C:
			p.collect(false)
		}
	}
}

func (p *Process) leaderRunning() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// collect scans /proc and returns the live descendants: the ppid closure
// from the child and every remembered process, the members of the child's
// group, and with deep set, holders of the token or of a watched pipe (and
// their closure). Everything found is remembered.
func (p *Process) collect(deep bool) []identity {
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
		if pid == p.self || pid <= 1 || found[pid] {
			return
		}
		found[pid] = true
		queue = append(queue, pid)
	}
	// Roots are only trusted while the pid still names the same process.
	if e, ok := byPid[p.pid]; ok && e.startTime == p.leader.startTime {
		add(p.pid)
	}
	p.mu.Lock()
	for id := range p.remembered {
		if e, ok := byPid[id.pid]; ok && e.startTime == id.startTime {
			add(id.pid)
		}
	}
	p.mu.Unlock()
	for _, e := range snap {
		if e.pgid == p.pid {
			add(e.pid)
		}
	}
	if deep {
		for _, e := range snap {
			if found[e.pid] || e.pid == p.self || e.dead() {
				continue
			}
			if environHas(e.pid, p.token) || holdsAny(e.pid, p.pipes) {
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
	p.mu.Lock()
	for pid := range found {
		e := byPid[pid]
		id := identity{pid: pid, startTime: e.startTime}
		if pid != p.pid && len(p.remembered) < maxRemembered {
			p.remembered[id] = true
		}
		if !e.dead() {
			out = append(out, id)
		}
	}
	p.mu.Unlock()
	return out
}

// signalTargets sends sig to the group (while the leader is unreaped, so the
// group id cannot have been recycled) and to each target, fenced on its
// start time.
func (p *Process) signalTargets(targets []identity, sig syscall.Signal) {
	if p.leaderRunning() {
		p.mu.Lock()
		p.signalled = true
		p.mu.Unlock()
		_ = syscall.Kill(-p.pid, sig)
	}
	for _, id := range targets {
		if alive(id) {
			_ = syscall.Kill(id.pid, sig)
		}
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

func (p *Process) teardown(term bool) {
	close(p.stopScan)
	<-p.scanDone
	targets := p.collect(true)
	if term && len(targets) > 0 {
		p.signalTargets(targets, syscall.SIGTERM)
		// New forks during the grace are caught by the rescans below.
		waitGone(targets, p.opt.TermGrace)
	}
	// SIGKILL rounds: rescan each time so a process forked during the
	// previous round is caught too. Bounded; a fork bomb can outrun it.
	for round := 0; round < 50; round++ {
		targets = p.collect(true)
		if len(targets) == 0 {
			break
		}
		p.signalTargets(targets, syscall.SIGKILL)
		waitGone(targets, time.Second)
	}
	// The direct child is dead now; its Wait returns (WaitDelay bounds any
	// stuck stdin copy).
	<-p.exited
	p.reapOrphans()
}

// reapOrphans waits for remembered descendants that were reparented to this
// process because it is a child subreaper (see EnableChildSubreaper), and
// for zombies of the child's group that ended up here. It only ever waits by
// pid for processes the guard knows to be its own, so it never steals an
// exit status another part of the program waits for.
func (p *Process) reapOrphans() {
	if !isSubreaper() {
		return
	}
	p.mu.Lock()
	known := make(map[identity]bool, len(p.remembered))
	for id := range p.remembered {
		known[id] = true
	}
	p.mu.Unlock()
	for _, e := range snapshot() {
		if e.ppid != p.self || e.pid == p.pid {
			continue
		}
		if known[identity{pid: e.pid, startTime: e.startTime}] || e.pgid == p.pid {
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
