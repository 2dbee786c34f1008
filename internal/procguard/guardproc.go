//go:build linux

package procguard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The guard process is the host program itself, re-executed through
// /proc/self/exe (the running binary, even if the file was replaced since)
// with guardEnv set. Host and guard talk over two pipes passed after the
// child's ExtraFiles, one line per message:
//
//	host → guard: "sig N", "term", "kill"
//	guard → host: "start PID STARTTIME", "fail CODE ERRNO MESSAGE",
//	              "exit CODE SIGNALED SIGNALLED", "done"
//
// EOF on the host → guard pipe means the host died.
const (
	guardEnv   = "ACP_PROCGUARD_GUARD"
	guardArgv0 = "acp-procguard"
	selfExe    = "/proc/self/exe"
)

// Exit codes of a guard process that could not report to its host.
const (
	guardExitInterrupted = 143 // stop signal or parent death
	guardExitUsage       = 64
	guardExitSpawn       = 127
)

// Timing of the guard process.
const (
	guardPoll = 20 * time.Millisecond // parent-death poll
	// guardStartTimeout bounds how long Start waits for the guard to report
	// the child's start (a loaded machine may need seconds to exec it).
	guardStartTimeout = 30 * time.Second
	// guardMargin is how long the host waits, beyond the grace and the
	// wait delay, for a stopping guard before it kills the guard and tears
	// the tree down itself.
	guardMargin = 10 * time.Second
	// maxReportLine bounds one guard → host message.
	maxReportLine = 4096
)

// ErrGuardLost reports a guard process that died before reporting the end of
// the child (someone killed it); the host then tore the tree down itself.
var ErrGuardLost = errors.New("procguard: guard process died")

var guardEnabled atomic.Bool

// EnableGuardProcess opts the program into guard processes; call it first
// thing in main (and in TestMain of tests that start guarded children).
// When the process was started as a guard process, it runs the guard and
// exits: it never returns. Otherwise it returns at once, and from then on
// Start with ModeAuto runs each child under its own guard process, which
// tears the child and all its descendants down (TERM, then KILL) when the
// host dies, even by SIGKILL. Where /proc/self/exe cannot be found (no
// /proc), the opt-in has no effect and the guard stays in-process.
func EnableGuardProcess() {
	if spec, ok := os.LookupEnv(guardEnv); ok {
		os.Exit(serveGuard(spec))
	}
	if _, err := os.Stat(selfExe); err == nil {
		guardEnabled.Store(true)
	}
}

// guardSpec is what the host tells the guard process through guardEnv. The
// child's argv is the guard's argv after guardArgv0.
type guardSpec struct {
	Path         string        `json:"path"`
	HostPid      int           `json:"host_pid"`
	ExtraFiles   int           `json:"extra_files"`
	Token        string        `json:"token"`
	Pipes        []string      `json:"pipes,omitempty"`
	TermGrace    time.Duration `json:"term_grace"`
	ScanInterval time.Duration `json:"scan_interval"`
	WaitDelay    time.Duration `json:"wait_delay"`
}

// remote is the host side of a child guarded by a guard process.
type remote struct {
	cmd   *exec.Cmd // the guard
	opt   Options
	token string
	pipes map[string]bool
	reps  *os.File // guard → host

	ctlMu sync.Mutex
	ctl   *os.File // host → guard; nil once closed

	gone     chan struct{} // the guard was waited for
	guardErr error
	exited   chan struct{} // the child's end is known
	over     chan struct{} // everything is torn down
	stopOnce sync.Once

	mu              sync.Mutex
	leader          identity
	code            int
	signaled        bool
	signalledBefore bool
	reported        bool // "exit" arrived
	finished        bool // "done" arrived
	lost            bool // the guard ended without "done"
}

// startError is a spawn failure the guard reported.
type startError struct {
	msg   string
	errno syscall.Errno
}

func (e *startError) Error() string { return e.msg }

func (e *startError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

func startRemote(cmd *exec.Cmd, opt Options) (*Process, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if cmd.Process != nil {
		return nil, errors.New("exec: already started")
	}
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setsid {
		return nil, ErrSetsid
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	r := &remote{
		cmd:    cmd,
		opt:    opt,
		token:  token,
		pipes:  pipeIDs(opt.WatchFiles),
		reps:   repR,
		ctl:    ctlW,
		gone:   make(chan struct{}),
		exited: make(chan struct{}),
		over:   make(chan struct{}),
	}
	spec := guardSpec{
		Path: cmd.Path, HostPid: os.Getpid(), ExtraFiles: len(cmd.ExtraFiles), Token: token,
		TermGrace: opt.TermGrace, ScanInterval: opt.ScanInterval, WaitDelay: opt.WaitDelay,
	}
	for id := range r.pipes {
		spec.Pipes = append(spec.Pipes, id)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	args := cmd.Args
	if len(args) == 0 {
		args = []string{cmd.Path}
	}
	cmd.Args = append([]string{guardArgv0}, args...)
	cmd.Path = selfExe
	cmd.Env = withEnv(cmd, guardEnv+"="+string(b))
	n := len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles[:n:n], ctlR, repW)
	// SIGTERM, not SIGKILL: the guard must live to tear the tree down.
	_ = prepare(cmd, opt, syscall.SIGTERM)
	err = startPinned(cmd, r.gone, &r.guardErr)
	ctlR.Close()
	repW.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return nil, err
	}
	lines := make(chan string, 4)
	go r.read(lines)
	timer := time.NewTimer(guardStartTimeout)
	defer timer.Stop()
	var first string
	select {
	case first = <-lines:
	case <-timer.C:
		first = "fail 0 0 procguard: guard process did not start the child in time"
	}
	kind, f := splitReport(first)
	if kind == "start" && len(f) == 2 {
		pid, err1 := strconv.Atoi(f[0])
		st, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 == nil && err2 == nil && pid > 1 {
			r.leader = identity{pid: pid, startTime: st}
			go r.watch(lines)
			return &Process{pid: pid, exited: r.exited, remote: r}, nil
		}
	}
	go func() {
		for range lines {
		}
	}()
	_ = cmd.Process.Kill() // unreaped until the Wait below: pid stable
	<-r.gone
	ctlW.Close()
	repR.Close()
	serr := &startError{msg: "procguard: unexpected guard report"}
	switch {
	case kind == "fail" && len(f) == 3:
		serr.msg = f[2]
		if n, err := strconv.Atoi(f[1]); err == nil && n > 0 && n < 4096 {
			serr.errno = syscall.Errno(n)
		}
	case first == "":
		serr.msg = fmt.Sprintf("procguard: guard process ended before starting the child (%v)", r.guardErr)
	}
	return nil, serr
}

// splitReport splits a guard report into its kind and fields; a "fail"
// report's last field is the rest of the line.
func splitReport(line string) (kind string, fields []string) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "fail":
		return kind, strings.SplitN(rest, " ", 3)
	case "done", "":
		return kind, nil
	}
	return kind, strings.Fields(rest)
}

// read forwards the guard's reports, one line each, until EOF.
func (r *remote) read(lines chan<- string) {
	defer close(lines)
	br := bufio.NewReaderSize(r.reps, maxReportLine)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return // not from our guard
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			lines <- string(line[:len(line)-1])
		}
		if err != nil {
			return
		}
	}
}

// watch handles the guard's reports after "start", then its end. If the
// guard died without finishing its teardown, the host does it.
func (r *remote) watch(lines <-chan string) {
	for line := range lines {
		kind, f := splitReport(line)
		switch {
		case kind == "exit" && len(f) == 3:
			code, err := strconv.Atoi(f[0])
			if err != nil {
				continue
			}
			r.mu.Lock()
			if !r.reported {
				r.code, r.signaled, r.signalledBefore = code, f[1] == "1", f[2] == "1"
				r.reported = true
				close(r.exited)
			}
			r.mu.Unlock()
		case kind == "done":
			r.mu.Lock()
			r.finished = true
			r.mu.Unlock()
		}
	}
	<-r.gone
	r.mu.Lock()
	finished, reported := r.finished, r.reported
	r.mu.Unlock()
	if !finished {
		r.mu.Lock()
		r.lost = true
		r.mu.Unlock()
		r.backstop()
	}
	if !reported {
		r.mu.Lock()
		r.code, r.signaled, r.signalledBefore = 128+int(syscall.SIGKILL), true, true
		r.reported = true
		close(r.exited)
		r.mu.Unlock()
	}
	r.ctlMu.Lock()
	r.ctl.Close()
	r.ctl = nil
	r.ctlMu.Unlock()
	r.reps.Close()
	close(r.over)
}

// backstop tears the tree down from the host after its guard died: the
// child got SIGKILL from Pdeathsig, but descendants may remain. Only the
// group, the token and the watched pipes find them here.
func (r *remote) backstop() {
	t := &tree{
		leader:     r.leader,
		skip:       [2]int{os.Getpid(), r.cmd.Process.Pid},
		token:      []byte(r.token),
		pipes:      r.pipes,
		remembered: map[identity]bool{},
	}
	t.leaderUnreaped = func() bool { return alive(t.leader) }
	t.killAll()
}

func (r *remote) send(msg string) {
	r.ctlMu.Lock()
	defer r.ctlMu.Unlock()
	if r.ctl == nil {
		return
	}
	// A stuck guard must not block the host.
	_ = r.ctl.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = r.ctl.WriteString(msg + "\n")
}

func (r *remote) signal(sig syscall.Signal) { r.send("sig " + strconv.Itoa(int(sig))) }

func (r *remote) stop(term bool) {
	r.stopOnce.Do(func() {
		if term {
			r.send("term")
		} else {
			r.send("kill")
		}
		t := time.NewTimer(r.opt.TermGrace + r.opt.WaitDelay + guardMargin)
		defer t.Stop()
		select {
		case <-r.over:
		case <-t.C:
			_ = r.cmd.Process.Kill() // the guard is unreaped: pid stable
		}
	})
	<-r.over
}

func (r *remote) exitCode() (int, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if r.lost {
		err = ErrGuardLost
	}
	return r.code, r.signaled, err
}

func (r *remote) signalledBeforeExit() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.signalledBefore
}

// serveGuard is the guard process: it starts the child guarded by itself,
// reports to the host, obeys its commands, and tears everything down when
// asked, on a stop signal, or when the host dies. It returns the exit code.
func serveGuard(specText string) int {
	var spec guardSpec
	if err := json.Unmarshal([]byte(specText), &spec); err != nil || spec.Path == "" ||
		spec.ExtraFiles < 0 || spec.ExtraFiles > 1000 || len(os.Args) < 2 {
		return guardExitUsage
	}
	ctlFD, repFD := 3+spec.ExtraFiles, 4+spec.ExtraFiles
	syscall.CloseOnExec(ctlFD)
	syscall.CloseOnExec(repFD)
	ctl := os.NewFile(uintptr(ctlFD), "procguard-control")
	rep := os.NewFile(uintptr(repFD), "procguard-report")
	report := func(format string, a ...any) { _, _ = fmt.Fprintf(rep, format+"\n", a...) }
	_ = os.Unsetenv(guardEnv)
	_ = os.Unsetenv(TokenEnv)

	stops := make(chan os.Signal, 4)
	signal.Notify(stops, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() != spec.HostPid {
		report("fail %d 0 procguard: host died before the child started", guardExitInterrupted)
		return guardExitInterrupted
	}
	_ = EnableChildSubreaper()

	child := &exec.Cmd{
		Path: spec.Path, Args: os.Args[1:], Env: os.Environ(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
	for i := 0; i < spec.ExtraFiles; i++ {
		child.ExtraFiles = append(child.ExtraFiles, os.NewFile(uintptr(3+i), "extra"))
	}
	pipes := map[string]bool{}
	for _, id := range spec.Pipes {
		pipes[id] = true
	}
	opt := Options{TermGrace: spec.TermGrace, ScanInterval: spec.ScanInterval, WaitDelay: spec.WaitDelay}.withDefaults()
	l, err := startLocal(child, opt, spec.Token, pipes, spec.HostPid)
	if err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		report("fail %d %d %s", guardExitSpawn, int(errno), strings.ReplaceAll(err.Error(), "\n", " "))
		return guardExitSpawn
	}
	report("start %d %d", l.tree.leader.pid, l.tree.leader.startTime)
	// Hand the child's stdio and extra files over: the host must see EOF
	// when the child's tree is done, not when the guard exits.
	releaseFiles(child.ExtraFiles)

	cmds := make(chan string, 8)
	go func() {
		defer close(cmds)
		sc := bufio.NewScanner(ctl)
		sc.Buffer(make([]byte, 256), 256)
		for sc.Scan() {
			cmds <- sc.Text()
		}
	}()
	tick := time.NewTicker(guardPoll)
	defer tick.Stop()
	exitC := l.exited
	var tornDown chan struct{}
	interrupted := false
	stop := func(term, stopSignal bool) {
		interrupted = interrupted || stopSignal
		if tornDown == nil {
			tornDown = make(chan struct{})
			go func(done chan struct{}) {
				l.stop(term)
				close(done)
			}(tornDown)
		}
	}
	reportExit := func() {
		exitC = nil
		st := l.cmd.ProcessState
		code, sig := -1, false
		if st != nil {
			code, sig = statusCode(st), statusSignaled(st)
		}
		report("exit %d %d %d", code, b2i(sig), b2i(l.tree.wasSignalled()))
	}
	for {
		select {
		case <-exitC:
			reportExit()
		case c, ok := <-cmds:
			if !ok { // the host died (or closed the pipe)
				cmds = nil
				stop(true, true)
				continue
			}
			verb, arg, _ := strings.Cut(c, " ")
			switch verb {
			case "sig":
				if n, err := strconv.Atoi(arg); err == nil && n > 0 && n < 65 {
					l.tree.signalTargets(l.tree.collect(false), syscall.Signal(n))
				}
			case "term":
				stop(true, false)
			case "kill":
				stop(false, false)
			}
		case <-stops:
			stop(true, true)
		case <-tick.C:
			if os.Getppid() != spec.HostPid {
				stop(true, true)
			}
		case <-tornDown:
			if exitC != nil {
				reportExit()
			}
			report("done")
			if interrupted {
				return guardExitInterrupted
			}
			code := 255
			if st := l.cmd.ProcessState; st != nil {
				code = min(max(statusCode(st), 0), 255)
			}
			return code
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// releaseFiles points the guard's stdin, stdout and stderr at /dev/null and
// closes its copies of the child's extra files.
func releaseFiles(extra []*os.File) {
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = syscall.Dup3(int(null.Fd()), fd, 0)
		}
		null.Close()
	}
	for _, f := range extra {
		f.Close()
	}
}
