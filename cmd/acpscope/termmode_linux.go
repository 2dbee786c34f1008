package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lineMode puts the terminal in into the editor's mode (see lineEditor):
// not canonical and without the terminal's echo, signals kept. It returns
// the function that restores the mode in had, or nil when in is not a
// terminal whose mode can be set (then lines are read as the terminal's
// canonical mode gives them).
func lineMode(in io.Reader) func() {
	f, ok := in.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var restore func()
	_ = rc.Control(func(fd uintptr) {
		was, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if err != nil {
			return
		}
		t := *was
		t.Lflag &^= unix.ICANON | unix.ECHO | unix.ECHONL | unix.IEXTEN
		t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
		if unix.IoctlSetTermios(int(fd), unix.TCSETS, &t) != nil {
			return
		}
		restore = func() {
			_ = rc.Control(func(fd uintptr) { _ = unix.IoctlSetTermios(int(fd), unix.TCSETS, was) })
		}
	})
	return restore
}
