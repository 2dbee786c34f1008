package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// TestRequestTraceOrdersQueuedRequests pins what WroteRequest is for: a
// caller sends a second request only once the first is on the wire,
// without waiting for the first's answer, and the peer reads them in that
// order, every time.
func TestRequestTraceOrdersQueuedRequests(t *testing.T) {
	for range 50 {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c := NewConnection(func(context.Context, string, json.RawMessage) (any, *RequestError) { return nil, nil }, outW, inR)
		lines := make(chan string, 2)
		go func() {
			r := bufio.NewReader(outR)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				lines <- line
			}
		}()
		wrote := make(chan error, 1)
		ctx := WithRequestTrace(context.Background(), &RequestTrace{WroteRequest: func(err error) { wrote <- err }})
		go func() { _ = c.SendRequestNoResult(ctx, "first", nil) }()
		if err := <-wrote; err != nil {
			t.Fatalf("first request: WroteRequest(%v)", err)
		}
		go func() { _ = c.SendRequestNoResult(context.Background(), "second", nil) }()
		var got []string
		for range 2 {
			var m struct{ Method string }
			if err := json.Unmarshal([]byte(<-lines), &m); err != nil {
				t.Fatal(err)
			}
			got = append(got, m.Method)
		}
		if got[0] != "first" || got[1] != "second" {
			t.Fatalf("the peer read %v, want [first second]", got)
		}
		_ = c.Close()
		inW.Close()
		outR.Close()
		_ = c.Wait(context.Background())
	}
}

// TestRequestTraceIsCalledOnceWhateverHappens pins that WroteRequest is
// called exactly once for every request, with an error when the line was
// not written: params that do not encode, a connection already ended, a
// ctx that ended first. A caller that waits for it never hangs.
func TestRequestTraceIsCalledOnceWhateverHappens(t *testing.T) {
	inR, inW := io.Pipe()
	_, outW := io.Pipe() // nobody reads: a write blocks until ctx ends
	c := NewConnection(func(context.Context, string, json.RawMessage) (any, *RequestError) { return nil, nil }, outW, inR)
	defer func() { _ = c.Close(); inW.Close(); _ = c.Wait(context.Background()) }()
	calls := 0
	var last error
	trace := &RequestTrace{WroteRequest: func(err error) { calls++; last = err }}

	calls = 0
	_ = c.SendRequestNoResult(WithRequestTrace(context.Background(), trace), "m", func() {})
	if calls != 1 || last == nil {
		t.Errorf("unencodable params: %d calls, err %v; want 1 call with an error", calls, last)
	}

	calls = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.SendRequestNoResult(WithRequestTrace(ctx, trace), "m", nil)
	if calls != 1 || !errors.Is(last, context.Canceled) {
		t.Errorf("ctx ended first: %d calls, err %v; want 1 call with context.Canceled", calls, last)
	}

	_ = c.Close()
	calls = 0
	_ = c.SendRequestNoResult(WithRequestTrace(context.Background(), trace), "m", nil)
	if calls != 1 || last == nil {
		t.Errorf("closed connection: %d calls, err %v; want 1 call with an error", calls, last)
	}
}
