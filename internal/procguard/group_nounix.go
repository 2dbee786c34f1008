//go:build !unix && !linux

package procguard

import (
	"os"
	"os/exec"
	"syscall"
)

// Without process groups only the direct child can be signalled.
func ownGroup(*exec.Cmd) error { return nil }

func signalGroup(p *os.Process, sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = p.Kill()
		return
	}
	_ = p.Signal(sig)
}

func killGroup(p *os.Process) { _ = p.Kill() }
