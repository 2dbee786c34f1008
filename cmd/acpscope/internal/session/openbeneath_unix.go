//go:build unix

package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// openBeneath opens rel (a clean relative path, no "..") for reading
// beneath the directory root, in a way no concurrent rename or symbolic
// link swap can lead outside root: on Linux one openat2 call that resolves
// the whole path beneath root (symbolic links that stay beneath root are
// followed, "magic" /proc links never); elsewhere, or where openat2 is not
// available, a walk that opens one component at a time relative to the
// previous one and refuses every symbolic link. The file is opened
// non-blocking, so a FIFO cannot stall the read.
func openBeneath(root, rel string) (*os.File, error) {
	dir, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer syscall.Close(dir)
	fd, err := openat2Beneath(dir, rel)
	if errors.Is(err, errNoOpenat2) {
		fd, err = walkBeneath(dir, rel)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(root, rel), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
}

// readFlags open the final component: read-only, non-blocking (a FIFO or
// a device never stalls), never becoming the controlling terminal.
const readFlags = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC | syscall.O_NOCTTY

// walkBeneath opens rel below the directory dir one component at a time,
// each relative to the one before and with O_NOFOLLOW, so the walk never
// leaves dir: a symbolic link anywhere on the path fails (ELOOP or
// ENOTDIR).
func walkBeneath(dir int, rel string) (int, error) {
	parts := strings.Split(rel, "/")
	cur := dir
	defer func() {
		if cur != dir {
			syscall.Close(cur)
		}
	}()
	for i, name := range parts {
		if name == "" || name == "." || name == ".." {
			return -1, syscall.EINVAL
		}
		flags := syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
		if i == len(parts)-1 {
			flags = readFlags | syscall.O_NOFOLLOW
		}
		fd, err := openatRetry(cur, name, flags)
		if err != nil {
			return -1, err
		}
		if cur != dir {
			syscall.Close(cur)
		}
		cur = fd
	}
	fd := cur
	cur = dir // handed to the caller: not closed
	return fd, nil
}

// openatRetry is openat, retried when a signal interrupts it.
func openatRetry(dir int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dir, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
