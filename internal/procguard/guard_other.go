//go:build !linux

package procguard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a started, guarded child (reduced guard: process group only).
type Process struct {
	cmd     *exec.Cmd
	opt     Options
	pid     int
	exited  chan struct{}
	waitErr error

	mu        sync.Mutex
	signalled bool
	once      sync.Once
}

// Start starts cmd under the reduced guard. The command must not have been
// started.
func Start(cmd *exec.Cmd, opt Options) (*Process, error) {
	opt = opt.withDefaults()
	switch opt.Mode {
	case ModeAuto, ModeInProcess:
	case ModeGuardProcess:
		return nil, ErrGuardNotEnabled
	default:
		return nil, fmt.Errorf("procguard: unknown Mode %d", opt.Mode)
	}
	if err := ownGroup(cmd); err != nil {
		return nil, err
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = opt.WaitDelay
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("procguard: token: %w", err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], TokenEnv+"="+hex.EncodeToString(raw[:]))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, opt: opt, pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the child's process id (and process group id where groups exist).
func (p *Process) Pid() int { return p.pid }

// GuardPid is 0: the reduced guard always runs in the calling process.
func (p *Process) GuardPid() int { return 0 }

// Exited is closed once the child has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitCode reports how the child ended, after Exited is closed.
func (p *Process) ExitCode() (code int, signaled bool, err error) {
	<-p.exited
	st := p.cmd.ProcessState
	if st == nil {
		return -1, false, p.waitErr
	}
	if code := st.ExitCode(); code >= 0 {
		return code, false, p.waitErr
	}
	return 128 + int(syscall.SIGKILL), true, p.waitErr
}

// SignalledBeforeExit reports whether the guard sent a signal while the
// child was still running.
func (p *Process) SignalledBeforeExit() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signalled
}

func (p *Process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Signal forwards sig to the child's process group.
func (p *Process) Signal(sig syscall.Signal) {
	if !p.running() {
		return
	}
	p.mu.Lock()
	p.signalled = true
	p.mu.Unlock()
	signalGroup(p.cmd.Process, sig)
}

// Terminate sends SIGTERM to the group, SIGKILL after the grace, and waits
// for the child.
func (p *Process) Terminate() {
	p.once.Do(func() {
		if p.running() {
			p.Signal(syscall.SIGTERM)
			t := time.NewTimer(p.opt.TermGrace)
			select {
			case <-p.exited:
			case <-t.C:
			}
			t.Stop()
		}
		// Members of the group may outlive the leader.
		killGroup(p.cmd.Process)
	})
	<-p.exited
}

// Kill is Terminate without the SIGTERM phase.
func (p *Process) Kill() {
	p.once.Do(func() {
		if p.running() {
			p.mu.Lock()
			p.signalled = true
			p.mu.Unlock()
		}
		killGroup(p.cmd.Process)
	})
	<-p.exited
}

// EnableChildSubreaper is Linux-only.
func EnableChildSubreaper() error {
	return errors.New("procguard: child subreaper is only available on Linux")
}

// EnableGuardProcess does nothing here: guard processes are Linux-only, and
// ModeAuto always selects the reduced in-process guard.
func EnableGuardProcess() {}
