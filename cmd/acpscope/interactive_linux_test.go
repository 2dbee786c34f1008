package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: the controller (master) and the
// terminal acpscope gets as its standard streams.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) error {
		rc, err := m.SyscallConn()
		if err != nil {
			return err
		}
		var errno syscall.Errno
		if err := rc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
		}); err != nil {
			return err
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
	var unlock int32
	if err := ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	var n uint32
	if err := ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// terminalSession is acpscope running on a pseudo-terminal.
type terminalSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	ctl    *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan error
}

// startOnTerminal runs acpscope with args on a new pseudo-terminal, as the
// session leader and foreground process of it (so Ctrl-C reaches it).
func startOnTerminal(t *testing.T, args ...string) *terminalSession {
	ctl, term := openPTY(t)
	cmd := exec.Command(acpscopeBin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close()
	s := &terminalSession{t: t, cmd: cmd, ctl: ctl, exited: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ctl.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		ctl.Close()
	})
	return s
}

// await waits until the terminal shows want n times.
func (s *terminalSession) await(want string, n int) {
	s.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		got := strings.Count(s.out.String(), want)
		s.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Fatalf("the terminal never showed %q ×%d:\n%s", want, n, s.out.String())
}

// typed sends keys to the terminal.
func (s *terminalSession) typed(keys string) {
	s.t.Helper()
	if _, err := s.ctl.WriteString(keys); err != nil {
		s.t.Fatal(err)
	}
}

// end waits for acpscope to exit and returns its code and the terminal's
// text.
func (s *terminalSession) end() (int, string) {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(hangGuard):
		s.t.Fatalf("acpscope did not end")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.ProcessState.ExitCode(), s.out.String()
}

// firstTurnOnTerminal runs the turns agent interactively in dir and types
// one prompt; it returns once that turn ended and the next prompt line is
// asked for.
func firstTurnOnTerminal(t *testing.T, dir, prompt string) *terminalSession {
	t.Helper()
	s := startOnTerminal(t, "run", "--no-db", "--cwd", dir, "--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state"))
	s.await(promptMark, 1)
	s.typed(prompt + "\n")
	s.await("turn 1 ended: end_turn", 1)
	s.await(promptMark, 2)
	return s
}

// On a terminal without --prompt, run reads one prompt line per turn on
// one session, shows each turn live and how it ended, and Ctrl-D ends it.
func TestInteractiveTurnsOnATerminal(t *testing.T) {
	dir := t.TempDir()
	s := firstTurnOnTerminal(t, dir, "find the flaky test")
	s.typed("fix it\n")
	s.await("turn 2 ended: end_turn", 1)
	s.await(promptMark, 3)
	s.typed("\x04") // Ctrl-D
	code, out := s.end()
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"find the flaky test", "fix it", "Subagents (2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, out)
		}
	}
	if state, _ := os.ReadFile(filepath.Join(dir, "state")); string(state) != "find the flaky test\nfix it\n" {
		t.Errorf("the agent got the prompts %q", state)
	}
}

// Ctrl-C during an interactive turn cancels that turn (session/cancel,
// its open card cancelled) and the session goes on with the next prompt
// line; the exit code is the worst turn's.
func TestInteractiveCtrlCCancelsTheRunningTurn(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	s := startOnTerminal(t, "run", "--no-db", "--cwd", dir, "--", fakeAgent, "-mode", "cancel", "-ready", ready)
	s.await(promptMark, 1)
	s.typed("a long task\n")
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.typed("\x03") // Ctrl-C
	s.await("interrupted (Ctrl-C); sent session/cancel; the agent stopped the turn (cancelled)", 1)
	s.await(promptMark, 2)
	s.typed("\x04")
	code, out := s.end()
	if code != exitCancelled {
		t.Fatalf("exit %d, want %d:\n%s", code, exitCancelled, out)
	}
	if !strings.Contains(out, "cancelled") {
		t.Fatalf("the card did not end cancelled:\n%s", out)
	}
}

// Ctrl-C at the prompt line, with no turn running, ends the session at
// once instead of waiting for a line.
func TestInteractiveCtrlCAtThePromptEnds(t *testing.T) {
	s := firstTurnOnTerminal(t, t.TempDir(), "one")
	s.typed("\x03")
	code, out := s.end()
	if code != exitCancelled {
		t.Fatalf("exit %d, want %d:\n%s", code, exitCancelled, out)
	}
}

// A prompt line longer than the terminal's canonical line (4,095 bytes)
// is read whole, typed or pasted (bracketed paste keeps its newlines in
// the prompt); Backspace still edits it.
func TestInteractiveLongLineIsReadWhole(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("0123456789", 5000) // 50,000 bytes
	s := startOnTerminal(t, "run", "--no-db", "--cwd", dir, "--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state"))
	s.await(promptMark, 1)
	s.typed(long + "xy\x7f\x7f\r")
	s.await("turn 1 ended: end_turn", 1)
	s.await(promptMark, 2)
	s.typed("\x1b[200~pasted\rtwo lines\x1b[201~\r")
	s.await("turn 2 ended: end_turn", 1)
	s.await(promptMark, 3)
	s.typed("\x04")
	if code, out := s.end(); code != exitOK {
		t.Fatalf("exit %d:\n%.2000s", code, out)
	}
	// The agent writes each prompt on a line, its newlines as spaces.
	state, _ := os.ReadFile(filepath.Join(dir, "state"))
	if want := long + "\npasted two lines\n"; string(state) != want {
		t.Fatalf("the agent got prompts of %d bytes, want %d: %.100q…", len(state), len(want), state)
	}
}
