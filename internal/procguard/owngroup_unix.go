//go:build unix

package procguard

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group, so that signals to
// the group reach everything it starts there. A caller's Setsid conflicts
// with that and is refused.
func ownGroup(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Setsid {
		return ErrSetsid
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	return nil
}
