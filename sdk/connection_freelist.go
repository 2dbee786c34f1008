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
	buffers freeList[*encodeBuffer]
	results freeList[chan error]
}

// freeList is a bounded stack of spare items, safe for concurrent use.
type freeList[T any] struct {
	mu    sync.Mutex
	items []T
}

// take pops a spare item; ok is false when there is none.
func (f *freeList[T]) take() (item T, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.items)
	if n == 0 {
		return item, false
	}
	item = f.items[n-1]
	var zero T
	f.items[n-1] = zero
	f.items = f.items[:n-1]
	return item, true
}

// put keeps item unless limit items are kept already.
func (f *freeList[T]) put(item T, limit int) {
	f.mu.Lock()
	if len(f.items) < limit {
		f.items = append(f.items, item)
	}
	f.mu.Unlock()
}

// encodeBuffer is a recycled buffer for laying out one outbound message.
type encodeBuffer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// getEncodeBuffer returns an empty encode buffer.
func (f *freeLists) getEncodeBuffer() *encodeBuffer {
	if e, ok := f.buffers.take(); ok {
		return e
	}
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
	f.buffers.put(e, maxFreeEncodeBuffers)
}

// getWriteResult returns an empty write-result channel (capacity 1).
func (f *freeLists) getWriteResult() chan error {
	if ch, ok := f.results.take(); ok {
		return ch
	}
	return make(chan error, 1)
}

// putWriteResult hands back a channel whose one result was received.
func (f *freeLists) putWriteResult(ch chan error) {
	f.results.put(ch, maxFreeWriteResults)
}
