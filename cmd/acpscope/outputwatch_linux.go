package main

import (
	"os"
	"syscall"
	"unsafe"
)

// watchOutputGone calls gone once the reader of the pipe f (acpscope's
// standard output) has gone away, even while nothing is written to it:
// poll reports an error condition (POLLERR) on a pipe's write end whose
// readers have all closed. Other kinds of output are not watched (a
// closed terminal sends SIGHUP; a file never goes away).
func watchOutputGone(f *os.File, gone func()) {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	var fd int
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil {
		return
	}
	go func() {
		// struct pollfd: int fd; short events; short revents. Errors and
		// hang-ups are reported without asking (events 0).
		pfd := struct {
			fd      int32
			events  int16
			revents int16
		}{fd: int32(fd)}
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, 0, 0, 0, 0)
			if errno == syscall.EINTR {
				continue
			}
			if errno == 0 && pfd.revents&(pollErr|pollHup) != 0 {
				gone()
			}
			return
		}
	}()
}

// Poll flags from <poll.h>.
const (
	pollErr = 0x8
	pollHup = 0x10
)
