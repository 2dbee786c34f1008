package acp

import "runtime"

// goroutineID returns the number the runtime gives the calling goroutine,
// read from the first line of its stack trace ("goroutine 18 [running]:").
// The connection uses it for one thing: to recognise a call made on the
// goroutine that runs notification handlers, whatever context the call
// carries (see Connection, "calls from handlers"). It is not cheap (about a
// microsecond), so it is asked only while a notification handler runs.
func goroutineID() uint64 {
	var buf [32]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
