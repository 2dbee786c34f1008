package tap

import (
	"runtime"
	"sync"
)

// procsMu orders the observers' changes of GOMAXPROCS.
var procsMu sync.Mutex

// ownProcessor gives the calling observer a Go processor of its own until
// the function it returns is called: GOMAXPROCS goes up by one meanwhile.
// An observer that has a backlog keeps its processor busy, and the Go
// scheduler would otherwise leave the pumps one processor fewer (half of
// a two-core machine's) whatever the thread's nice value: with one more
// processor than cores, the pumps keep every core they had, and the
// kernel, not the Go scheduler, gives the observer's thread what CPU the
// pumps, the editor and the agent leave.
func ownProcessor() (release func()) {
	procsMu.Lock()
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	procsMu.Unlock()
	return func() {
		procsMu.Lock()
		runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0)-1, 1))
		procsMu.Unlock()
	}
}
