//go:build unix

package cli

import (
	"os"
	"syscall"
)

// fileIdentity returns the device and inode of a file, so a replaced binary
// at the same path is re-probed.
func fileIdentity(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
