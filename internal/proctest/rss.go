package proctest

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// PeakRSSMiB is this process's peak resident set (VmHWM) in MiB, or 0
// where /proc/self/status cannot be read.
func PeakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// ResetPeakRSS returns what the process no longer uses to the system and
// restarts the kernel's peak resident set (Linux clear_refs), so that the
// next PeakRSSMiB is the peak of what follows; elsewhere it only frees.
func ResetPeakRSS() {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
