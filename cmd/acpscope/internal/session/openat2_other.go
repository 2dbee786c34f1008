//go:build unix && !(linux && (amd64 || arm64 || 386 || arm || riscv64 || loong64 || ppc64 || ppc64le || s390x))

package session

import "errors"

// errNoOpenat2 says openat2 is not available here; openBeneath walks the
// path one component at a time instead.
var errNoOpenat2 = errors.New("openat2 not available")

func openat2Beneath(int, string) (int, error) { return -1, errNoOpenat2 }
