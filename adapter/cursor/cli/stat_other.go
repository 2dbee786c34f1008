//go:build !unix

package cli

import "os"

// fileIdentity is unavailable here; size and mtime still key the cache.
func fileIdentity(os.FileInfo) (dev, ino uint64) { return 0, 0 }
