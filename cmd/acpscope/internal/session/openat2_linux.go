//go:build linux && (amd64 || arm64 || 386 || arm || riscv64 || loong64 || ppc64 || ppc64le || s390x)

package session

import (
	"errors"
	"syscall"
	"unsafe"
)

// sysOpenat2 is the openat2 system call number, the same on every
// architecture this file builds for (Linux 5.6 and later).
const sysOpenat2 = 437

// openat2 resolve flags (linux/openat2.h).
const (
	resolveNoMagiclinks = 0x02
	resolveBeneath      = 0x08
)

// openHow is struct open_how.
type openHow struct {
	flags   uint64
	mode    uint64
	resolve uint64
}

// errNoOpenat2 says the kernel (or a seccomp filter) does not offer
// openat2; the caller walks the path instead.
var errNoOpenat2 = errors.New("openat2 not available")

// openat2Beneath opens rel relative to the directory dir with
// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS: the kernel resolves the whole path
// and fails with EXDEV if any step (a "..", an absolute or escaping
// symbolic link) would leave dir, atomically with the open.
func openat2Beneath(dir int, rel string) (int, error) {
	path, err := syscall.BytePtrFromString(rel)
	if err != nil {
		return -1, err
	}
	how := openHow{flags: uint64(readFlags), resolve: resolveBeneath | resolveNoMagiclinks}
	for attempt := 0; ; attempt++ {
		fd, _, errno := syscall.Syscall6(sysOpenat2, uintptr(dir), uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
		switch {
		case errno == 0:
			return int(fd), nil
		case errno == syscall.ENOSYS || errno == syscall.EPERM:
			// Not offered, or refused by a seccomp filter (older container
			// runtimes answer EPERM for unknown calls): the walk decides, and
			// it is as safe (it only refuses symbolic links altogether).
			return -1, errNoOpenat2
		case errno == syscall.EINTR, errno == syscall.EAGAIN && attempt < 16:
			// EAGAIN: a rename raced the resolution; the kernel asks for
			// a retry rather than risk a wrong answer.
			continue
		}
		return -1, errno
	}
}
