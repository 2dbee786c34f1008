package cli

import (
	"os"
	"syscall"
	"unsafe"
)

// unreadBytes returns how many bytes wait in the pipe (FIONREAD), or 0.
func unreadBytes(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	_ = rc.Control(func(fd uintptr) {
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
		if e != 0 {
			n = 0
		}
	})
	return int(n)
}
