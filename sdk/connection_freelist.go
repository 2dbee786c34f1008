package acp

// Per-connection free lists. Everything a connection recycles stays with
// that connection: nothing made while serving one connection (a channel, a
// buffer) is ever handed to another, so connections created in different
// testing/synctest bubbles share nothing, and a connection's memory goes
// with it.

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Free-list bounds: how many spare items a connection keeps, and the
// largest encode buffer it keeps (larger ones, grown by a big message, are
// left to the garbage collector).
const (
	maxFreeEncodeBuffers = 4
	maxFreeWriteResults  = 4
	maxFreeBufferBytes   = 64 << 10
)

// freeLists holds a connection's spare encode buffers and write-result
// channels.
type freeLists struct {
	mu      sync.Mutex
	buffers []*encodeBuffer
	results []chan error
}

// encodeBuffer is a recycled buffer for laying out one outbound message.
type encodeBuffer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// getEncodeBuffer returns an empty encode buffer.
func (f *freeLists) getEncodeBuffer() *encodeBuffer {
	f.mu.Lock()
	if n := len(f.buffers); n > 0 {
		e := f.buffers[n-1]
		f.buffers[n-1] = nil
		f.buffers = f.buffers[:n-1]
		f.mu.Unlock()
		return e
	}
	f.mu.Unlock()
	e := &encodeBuffer{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}

// putEncodeBuffer hands back a buffer nothing holds any more.
func (f *freeLists) putEncodeBuffer(e *encodeBuffer) {
	if e.buf.Cap() > maxFreeBufferBytes {
		return
	}
	e.buf.Reset()
	f.mu.Lock()
	if len(f.buffers) < maxFreeEncodeBuffers {
		f.buffers = append(f.buffers, e)
	}
	f.mu.Unlock()
}

// getWriteResult returns an empty write-result channel (capacity 1).
func (f *freeLists) getWriteResult() chan error {
	f.mu.Lock()
	if n := len(f.results); n > 0 {
		ch := f.results[n-1]
		f.results[n-1] = nil
		f.results = f.results[:n-1]
		f.mu.Unlock()
		return ch
	}
	f.mu.Unlock()
	return make(chan error, 1)
}

// putWriteResult hands back a channel whose one result was received.
func (f *freeLists) putWriteResult(ch chan error) {
	f.mu.Lock()
	if len(f.results) < maxFreeWriteResults {
		f.results = append(f.results, ch)
	}
	f.mu.Unlock()
}
