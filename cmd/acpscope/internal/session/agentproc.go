package session

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/procguard"
)

// tailWait bounds how long the agent's output is still read once the
// agent has exited: a descendant that keeps the pipe open (a daemonised
// grandchild) cannot hold the connection past it.
const tailWait = 2 * time.Second

// Agent is a running agent with its stdio, under the process guard.
//
// acpscope owns both pipes (os.Pipe), not exec.Cmd: Cmd.Wait, which the
// guard calls as soon as the agent exits, closes the pipes it made, and a
// read still under way would lose the agent's last frames. The agent's
// output is read to end of file instead (see agentOutput).
type Agent struct {
	proc *procguard.Process
	// Stdin is the agent's standard input; Stdout its standard output,
	// read to its end.
	Stdin  *os.File
	Stdout io.ReadCloser
}

// StartAgent starts command under the process guard (its own process group,
// descendants tracked), with stdio piped and stderr passed through.
//
// A relative command with a directory part (./agent, bin/agent) is resolved
// as a shell would, from the directory acpscope was started in, not from
// dir (the session's --cwd, where the agent runs); a bare name is looked up
// in $PATH.
func StartAgent(command []string, dir string, stderr io.Writer) (*Agent, error) {
	name := command[0]
	if strings.ContainsRune(name, filepath.Separator) && !filepath.IsAbs(name) {
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, err
		}
		name = abs
	}
	cmd := exec.Command(name, command[1:]...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	proc, err := procguard.Start(cmd, procguard.Options{TermGrace: 3 * time.Second, WatchFiles: []*os.File{outR}})
	// The child has its ends now (or never will): ours are closed, so the
	// agent's output ends when the agent and its descendants close theirs.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	out := &agentOutput{f: outR, eof: make(chan struct{})}
	go out.closeAfterExit(proc.Exited())
	return &Agent{proc: proc, Stdin: inW, Stdout: out}, nil
}

// agentOutput is the read end of the agent's standard output. It is read
// to end of file; it is closed only by kill, or tailWait after the agent
// exited when a descendant still holds the write end.
type agentOutput struct {
	f       *os.File
	eof     chan struct{} // closed once a read failed (end of file, or closed)
	eofOnce sync.Once
}

// Read reads the agent's output.
func (o *agentOutput) Read(p []byte) (int, error) {
	n, err := o.f.Read(p)
	if err != nil {
		o.eofOnce.Do(func() { close(o.eof) })
	}
	return n, err
}

// Close closes the read end, ending a read under way.
func (o *agentOutput) Close() error { return o.f.Close() }

// closeAfterExit closes the output tailWait after the agent exited unless
// it was read to its end first.
func (o *agentOutput) closeAfterExit(exited <-chan struct{}) {
	select {
	case <-exited:
	case <-o.eof:
		return
	}
	t := time.NewTimer(tailWait)
	defer t.Stop()
	select {
	case <-o.eof:
	case <-t.C:
		o.f.Close()
	}
}

// Process is the agent's guarded process: its exit, signals and
// termination (the tap forwards signals and watches the exit itself).
func (a *Agent) Process() *procguard.Process { return a.proc }

// Kill ends the agent and every descendant at once (SIGKILL to the whole
// tree, through the process guard) and closes its stdio, so that a write
// blocked on an agent that stopped reading ends.
func (a *Agent) Kill() {
	a.proc.Kill()
	a.Stdin.Close()
	a.Stdout.Close()
}

// Stop ends the agent: stdin is closed first (an ACP agent exits at end of
// input); after a grace period the guard terminates the process and every
// descendant (SIGTERM, then SIGKILL).
func (a *Agent) Stop() {
	a.Stdin.Close()
	select {
	case <-a.proc.Exited():
	case <-time.After(2 * time.Second):
	}
	a.proc.Terminate()
	a.Stdout.Close()
}
