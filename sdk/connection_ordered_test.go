package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// orderedPeer starts a connection whose handler records the order in which
// handlers start; the notification "n" blocks until release is closed.
func orderedPeer(t *testing.T, opts ...ConnectionOption) (in io.Writer, out *bufio.Reader, started <-chan string, release chan struct{}) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	start := make(chan string, 8)
	rel := make(chan struct{})
	handler := func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
		start <- method
		if method == "n" {
			<-rel
		}
		return struct{}{}, nil
	}
	c := NewConnection(handler, outW, inR, opts...)
	t.Cleanup(func() {
		inW.Close()
		<-c.Done()
		outR.Close()
	})
	return inW, bufio.NewReader(outR), start, rel
}

func TestOrderedRequestsWaitForEarlierNotifications(t *testing.T) {
	in, out, started, release := orderedPeer(t, WithOrderedRequests())
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"n","params":{}}`+"\n"+`{"jsonrpc":"2.0","id":1,"method":"r","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if got := <-started; got != "n" {
		t.Fatalf("first handler = %q, want n", got)
	}
	select {
	case got := <-started:
		t.Fatalf("%q started while the earlier notification was still running", got)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if got := <-started; got != "r" {
		t.Fatalf("second handler = %q, want r", got)
	}
	line, err := out.ReadString('\n')
	if err != nil || line != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("reply = %q, %v", line, err)
	}
}

func TestRequestsOvertakeNotificationsByDefault(t *testing.T) {
	in, out, started, release := orderedPeer(t)
	defer close(release)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"n","params":{}}`+"\n"+`{"jsonrpc":"2.0","id":1,"method":"r","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{<-started: true, <-started: true}
	if !seen["n"] || !seen["r"] {
		t.Fatalf("handlers started: %v", seen)
	}
	if line, err := out.ReadString('\n'); err != nil || line != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("reply = %q, %v", line, err)
	}
}

func TestOrderedRequestWithoutPendingNotificationsRunsAtOnce(t *testing.T) {
	in, out, started, release := orderedPeer(t, WithOrderedRequests())
	defer close(release)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":"a","method":"r","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if got := <-started; got != "r" {
		t.Fatalf("handler = %q", got)
	}
	if line, err := out.ReadString('\n'); err != nil || line != `{"jsonrpc":"2.0","id":"a","result":{}}`+"\n" {
		t.Fatalf("reply = %q, %v", line, err)
	}
}
