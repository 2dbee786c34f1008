//go:build linux

package procguard

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procEntry is one row of a /proc snapshot: enough to find descendants and
// to fence signals against pid reuse (a pid plus its start time names one
// process for the life of the system).
type procEntry struct {
	pid       int
	ppid      int
	pgid      int
	sid       int
	startTime uint64 // field 22 of /proc/<pid>/stat, clock ticks since boot
	state     byte   // 'R', 'S', 'Z', …
}

// identity is the pair that fences a signal: the pid alone can be recycled.
type identity struct {
	pid       int
	startTime uint64
}

// maxSnapshotRows bounds one scan of the process table.
const maxSnapshotRows = 32768

// readStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so the fields are read after the last ')'.
func readStat(pid int) (procEntry, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	return parseStat(pid, b)
}

func parseStat(pid int, b []byte) (procEntry, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procEntry{}, false
	}
	fields := strings.Fields(string(b[i+2:]))
	// fields[0] is field 3 (state); field N is fields[N-3].
	if len(fields) < 20 {
		return procEntry{}, false
	}
	e := procEntry{pid: pid}
	if len(fields[0]) > 0 {
		e.state = fields[0][0]
	}
	var err error
	if e.ppid, err = strconv.Atoi(fields[1]); err != nil {
		return procEntry{}, false
	}
	if e.pgid, err = strconv.Atoi(fields[2]); err != nil {
		return procEntry{}, false
	}
	if e.sid, err = strconv.Atoi(fields[3]); err != nil {
		return procEntry{}, false
	}
	if e.startTime, err = strconv.ParseUint(fields[19], 10, 64); err != nil {
		return procEntry{}, false
	}
	return e, true
}

// dead reports whether the entry no longer runs code: a zombie or a task
// being torn down holds no resources besides its pid slot.
func (e procEntry) dead() bool { return e.state == 'Z' || e.state == 'X' || e.state == 'x' }

// snapshot lists every process in /proc (bounded).
func snapshot() []procEntry {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]procEntry, 0, len(names))
	for _, n := range names {
		if len(out) >= maxSnapshotRows {
			break
		}
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		if e, ok := readStat(pid); ok {
			out = append(out, e)
		}
	}
	return out
}

// alive reports whether the process named by id still runs code: it exists,
// is the same process (start time), and is not a zombie.
func alive(id identity) bool {
	e, ok := readStat(id.pid)
	if !ok || e.startTime != id.startTime {
		return false
	}
	return !e.dead()
}

// environHas reports whether /proc/<pid>/environ holds the exact entry kv.
func environHas(pid int, kv []byte) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		var cur []byte
		if i < 0 {
			cur, b = b, nil
		} else {
			cur, b = b[:i], b[i+1:]
		}
		if bytes.Equal(cur, kv) {
			return true
		}
	}
	return false
}

// holdsAny reports whether pid has a descriptor open for writing on one of
// the given pipe or file targets (readlink form, e.g. "pipe:[12345]"). Only
// writers count: both ends of a pipe have the same name, and the read end is
// the host's. A process holding only that end is a consumer the host started
// or a fork of the host that has not called exec yet (it holds every
// descriptor of the host until then); neither is the child's descendant.
func holdsAny(pid int, targets map[string]bool) bool {
	if len(targets) == 0 {
		return false
	}
	base := "/proc/" + strconv.Itoa(pid)
	d, err := os.Open(base + "/fd")
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		l, err := os.Readlink(base + "/fd/" + n)
		if err == nil && targets[l] && openForWriting(base+"/fdinfo/"+n) {
			return true
		}
	}
	return false
}

// openForWriting reads the "flags:" line (octal open flags) of a
// /proc/<pid>/fdinfo/<fd> file and reports whether the access mode is
// O_WRONLY or O_RDWR.
func openForWriting(fdinfo string) bool {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "flags:")
		if !ok {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		return err == nil && flags&syscall.O_ACCMODE != syscall.O_RDONLY
	}
	return false
}
