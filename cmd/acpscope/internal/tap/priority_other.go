//go:build !linux

package tap

import "runtime"

// lowerPriority runs the calling goroutine on a thread of its own for the
// rest of its life, as on Linux; where a thread has no priority of its own
// it changes nothing else, and returns "".
func lowerPriority() string {
	runtime.LockOSThread()
	return ""
}

// threadPolicy is "" where a thread has no priority of its own.
func threadPolicy() string { return "" }
