package tap

import (
	"os"
	"runtime/debug"
)

// observerWork is how many times a line's size the observer may hold while
// it takes the line: the envelope's copy of params or result, the decoded
// update, and the record file's compacted copy.
const observerWork = 3

// runtimeSlack is what the soft memory limit leaves above MemoryBound for
// the runtime, the stacks, the tracker's cards and the view.
const runtimeSlack = 32 << 20

// MemoryBound is the memory a tap holds for its observation at most, with
// a queue of queueBytes and lines of at most maxLineBytes: every line
// held between the pumps and the observer counts in the queue's bytes
// (lines queued, the one being observed, and the starts of lines still
// being read), and the observer works on one line at a time. The tap's
// process stays within it plus a constant (runtimeSlack and the program),
// whatever the peers send: a line over the limit, or one the queue has no
// room for, is forwarded without being kept.
func MemoryBound(queueBytes int64, maxLineBytes int) int64 {
	if queueBytes <= 0 {
		queueBytes = DefaultQueueBytes
	}
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	return queueBytes + observerWork*int64(maxLineBytes)
}

// LimitMemory sets the Go runtime's soft memory limit to MemoryBound plus
// runtimeSlack, so that the collector's headroom (by default as much
// garbage as live memory) does not double the bound, and returns the limit
// in effect. A limit set by GOMEMLIMIT is left as it is. It is for the
// tap's process: the limit is the whole program's.
func LimitMemory(queueBytes int64, maxLineBytes int) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	limit := MemoryBound(queueBytes, maxLineBytes) + runtimeSlack
	debug.SetMemoryLimit(limit)
	return limit
}
