//go:build !linux

package tap

// observerNice is the observer thread's nice value where threads have one.
const observerNice = 19

// lowerPriority does nothing where a thread has no priority of its own,
// and returns 0.
func lowerPriority() int { return 0 }

// threadNice is 0 where a thread has no priority of its own.
func threadNice() int { return 0 }
