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
	// WatchFiles are pipes (typically the child's stdout and stderr) whose
	// holders teardown treats as descendants.
	WatchFiles []*os.File
}

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
