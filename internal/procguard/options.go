package procguard

import (
	"errors"
	"os"
	"time"
)

// TokenEnv is the environment variable through which every process the child
// starts can be recognised, even after it left the group and its parent died.
const TokenEnv = "ACP_PROCGUARD_TOKEN"

// Defaults used when an Options field is zero.
const (
	DefaultTermGrace    = 500 * time.Millisecond
	DefaultScanInterval = 100 * time.Millisecond
	DefaultWaitDelay    = 2 * time.Second
)

// maxRemembered bounds the descendants a guard remembers.
const maxRemembered = 4096

// Options tunes a guard. Zero values select the defaults above.
type Options struct {
	// TermGrace is how long teardown waits after SIGTERM before SIGKILL.
	TermGrace time.Duration
	// ScanInterval is the period of descendant snapshots while the child
	// runs; a negative value disables periodic snapshots (teardown still
	// scans).
	ScanInterval time.Duration
	// WaitDelay is set as exec.Cmd.WaitDelay when the command has none.
	WaitDelay time.Duration
	// WatchFiles are the host's read ends of pipes (typically the child's
	// stdout and stderr); teardown treats the processes holding one of
	// them open for writing as descendants. Holders of the read end only
	// are not (the host's own consumers, forks of the host before exec).
	WatchFiles []*os.File
	// Mode chooses where the guard runs; the zero value is ModeAuto.
	Mode Mode
}

// Mode chooses where the guard of a child runs.
type Mode int

const (
	// ModeAuto runs the guard in a separate guard process when the program
	// called EnableGuardProcess, and in the calling process otherwise.
	ModeAuto Mode = iota
	// ModeInProcess runs the guard in the calling process. If that process
	// is SIGKILLed, Pdeathsig kills the direct child, but descendants that
	// left the child's process group survive.
	ModeInProcess
	// ModeGuardProcess runs the guard in a separate process (the program
	// itself, re-executed), which tears the whole tree down when the calling
	// process dies, however it dies. Start fails with ErrGuardNotEnabled
	// unless the program called EnableGuardProcess (Linux only).
	ModeGuardProcess
)

// ErrGuardNotEnabled is returned by Start for ModeGuardProcess when the
// program did not call EnableGuardProcess, or on systems without the guard
// process.
var ErrGuardNotEnabled = errors.New("procguard: guard process not enabled (call procguard.EnableGuardProcess first thing in main; Linux only)")

func (o Options) withDefaults() Options {
	if o.TermGrace <= 0 {
		o.TermGrace = DefaultTermGrace
	}
	if o.ScanInterval == 0 {
		o.ScanInterval = DefaultScanInterval
	}
	if o.WaitDelay <= 0 {
		o.WaitDelay = DefaultWaitDelay
	}
	return o
}

// ErrSetsid is returned when the command asks for a new session: the guard
// needs a new process group, and Setsid with Setpgid makes Start fail.
var ErrSetsid = errors.New("procguard: SysProcAttr.Setsid is not allowed; the guard sets Setpgid")
