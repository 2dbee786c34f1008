package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoHandler answers every request with its params and ignores
// notifications.
func echoHandler(_ context.Context, _ string, params json.RawMessage) (any, *RequestError) {
	return params, nil
}

func TestWireResponseBytes(t *testing.T) {
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		switch method {
		case "map":
			return map[string]any{"content": "hello", "html": "<a&b>"}, nil
		case "nil":
			return nil, nil
		case "empty":
			return struct{}{}, nil
		case "fail":
			return nil, NewInternalError(map[string]any{"error": "boom"})
		case "unmarshalable":
			return map[string]any{"c": make(chan int)}, nil
		case "bad-error-data":
			return nil, NewInvalidParams(make(chan int))
		}
		return nil, NewMethodNotFound(method)
	})
	cases := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":"abc","method":"map"}`, `{"jsonrpc":"2.0","id":"abc","result":{"content":"hello","html":"\u003ca\u0026b\u003e"}}`},
		{`{"jsonrpc":"2.0","id":1.0e1,"method":"nil"}`, `{"jsonrpc":"2.0","id":1.0e1,"result":null}`},
		{`{"jsonrpc":"2.0","id":-3,"method":"empty","params":{}}`, `{"jsonrpc":"2.0","id":-3,"result":{}}`},
		{`{"jsonrpc":"2.0","id":7,"method":"fail"}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error","data":{"error":"boom"}}}`},
		{`{"jsonrpc":"2.0","id":8,"method":"cursor/task"}`, `{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found","data":{"method":"cursor/task"}}}`},
		{`{"jsonrpc":"2.0","id":9,"method":"unmarshalable"}`, `{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"Internal error","data":{"error":"json: unsupported type: chan int"}}}`},
		{`{"jsonrpc":"2.0","id":10,"method":"bad-error-data"}`, `{"jsonrpc":"2.0","id":10,"error":{"code":-32603,"message":"Internal error","data":{"error":"json: unsupported type: chan int"}}}`},
		// Ids are echoed as upstream re-marshals them: compacted, HTML-escaped.
		{`{"jsonrpc":"2.0","id":"<x>","method":"nil"}`, `{"jsonrpc":"2.0","id":"\u003cx\u003e","result":null}`},
		{`{"id" : 11 , "method" : "nil"}`, `{"jsonrpc":"2.0","id":11,"result":null}`},
	}
	for _, c := range cases {
		p.send(c.in)
		p.expectLine(c.want)
	}
}

func TestWireOutboundBytes(t *testing.T) {
	p := newRawPeer(t, echoHandler)
	ctx := context.Background()
	type params struct {
		B string `json:"b"`
		A int    `json:"a"`
	}
	done := make(chan error, 1)
	var got map[string]any
	go func() {
		var err error
		got, err = SendRequest[map[string]any](p.conn, ctx, "initialize", params{B: "<&>", A: 1})
		done <- err
	}()
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"b":"\u003c\u0026\u003e","a":1}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"x":1}}`)
	if err := waitChan(t, done, "SendRequest"); err != nil {
		t.Fatal(err)
	}
	if got["x"] != float64(1) {
		t.Fatalf("result = %v", got)
	}

	if err := p.conn.SendNotification(ctx, "session/cancel", map[string]string{"sessionId": "s1"}); err != nil {
		t.Fatal(err)
	}
	p.expectLine(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)

	// nil params are omitted; a RawMessage is compacted as upstream does.
	if err := p.conn.SendNotification(ctx, "n", nil); err != nil {
		t.Fatal(err)
	}
	p.expectLine(`{"jsonrpc":"2.0","method":"n"}`)
	if err := p.conn.SendNotification(ctx, "m\"<", json.RawMessage(` { "a" : [1, 2] } `)); err != nil {
		t.Fatal(err)
	}
	p.expectLine(`{"jsonrpc":"2.0","method":"m\"\u003c","params":{"a":[1,2]}}`)

	// Params that do not marshal: -32602, nothing sent.
	err := p.conn.SendNotification(ctx, "n", make(chan int))
	var re *RequestError
	if !errors.As(err, &re) || re.Code != -32602 {
		t.Fatalf("err = %v, want -32602", err)
	}
	_, err = SendRequest[any](p.conn, ctx, "r", json.RawMessage(`{bad`))
	if !errors.As(err, &re) || re.Code != -32602 {
		t.Fatalf("err = %v, want -32602", err)
	}

	// Ids keep counting across SendRequest and SendRequestNoResult.
	go func() { done <- p.conn.SendRequestNoResult(ctx, "r2", nil) }()
	line := p.recv()
	if !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":3,"method":"r2"}`) {
		t.Fatalf("line = %s", line)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"x"}}}`)
	err = waitChan(t, done, "SendRequestNoResult")
	if !errors.As(err, &re) || re.Code != -32002 || re.Message != "Resource not found" {
		t.Fatalf("err = %v", err)
	}
}

func TestWireResponseIDMatching(t *testing.T) {
	p := newRawPeer(t, echoHandler)
	ctx := context.Background()
	for i, id := range []string{"1", "2.0", "30e-1", "0.4e1", "5E0", "6.000"} {
		done := make(chan error, 1)
		go func() {
			_, err := SendRequest[any](p.conn, ctx, "m", nil)
			done <- err
		}()
		p.expectLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`, i+1))
		// A string id never matches a number; a late duplicate is dropped.
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d","result":"wrong"}`, i+1))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"ok"}`, id))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"late"}`, id))
		if err := waitChan(t, done, "response "+id); err != nil {
			t.Fatalf("id %s: %v", id, err)
		}
	}
}

func TestCanonicalIDKey(t *testing.T) {
	same := [][]string{
		{"1", "1.0", "10e-1", "1e0", "0.1e1", "1.00E+0"},
		{"0", "-0", "0.0", "0e5"},
		{"-12.5", "-125e-1", "-0.125e2"},
		{"100", "1e2", "10E1"},
		{`"a"`, `"\u0061"`},
		{`"<"`, `"\u003c"`},
		{"null"},
	}
	for _, group := range same {
		want, err := canonicalIDKey([]byte(group[0]))
		if err != nil {
			t.Fatalf("%s: %v", group[0], err)
		}
		for _, raw := range group[1:] {
			got, err := canonicalIDKey([]byte(raw))
			if err != nil || got != want {
				t.Fatalf("canonicalIDKey(%s) = %q, %v; want %q", raw, got, err, want)
			}
		}
	}
	one, _ := canonicalIDKey([]byte("1"))
	str, _ := canonicalIDKey([]byte(`"1"`))
	if one == str {
		t.Fatal(`"1" must not match 1`)
	}
	for _, raw := range []string{"1e5000", strings.Repeat("9", 5000), "1e-5000", "true", "{}", "[]", "01", "1.", "-"} {
		if _, err := canonicalIDKey([]byte(raw)); err == nil {
			t.Errorf("canonicalIDKey(%s): want error", raw)
		}
	}
}

func TestWireNullIDIsNotification(t *testing.T) {
	got := make(chan bool, 1)
	p := newRawPeer(t, func(ctx context.Context, method string, _ json.RawMessage) (any, *RequestError) {
		if method == "note" {
			got <- isInboundRequest(ctx)
			return nil, nil
		}
		return isInboundRequest(ctx), nil
	})
	p.send(`{"jsonrpc":"2.0","id":null,"method":"note"}`)
	if waitChan(t, got, "notification") {
		t.Fatal("a null id must be a notification")
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":"req"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":4,"result":true}`)
	// A response with a null id is neither: logged and dropped.
	p.send(`{"jsonrpc":"2.0","id":null,"result":1}`)
	p.send(`{"jsonrpc":"2.0","id":5,"method":"req"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":5,"result":true}`)
	if !p.logs.contains("received message with neither id nor method") {
		t.Fatal("missing log for a message with neither id nor method")
	}
}

func TestWireMalformedLinesKeepConnection(t *testing.T) {
	p := newRawPeer(t, echoHandler)
	const (
		parse   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"error":`
		invalid = `"error":{"code":-32600,"message":"Invalid request","data":{"error":`
	)
	// Each line and the start of its reply ("" when none is possible).
	cases := []struct{ line, reply string }{
		{`{`, parse + `"invalid JSON at offset 1: unexpected end of JSON input"}}}`},
		{`"x"`, `{"jsonrpc":"2.0","id":null,` + invalid + `"json-rpc message is not a JSON object"}}}`},
		{`12`, `{"jsonrpc":"2.0","id":null,` + invalid + `"json-rpc message is not a JSON object"}}}`},
		{`{"id":1,"method":5}`, `{"jsonrpc":"2.0","id":1,` + invalid + `"json-rpc member \"method\" is not a string"}}}`},
		{`{"id":1,"method":"m"} trailing`, parse + `"invalid JSON at offset 22: invalid character after top-level value"}}}`},
		{`{"id":1,"method":"m","error":"nope"}`, `{"jsonrpc":"2.0","id":1,` + invalid},
		{`{"jsonrpc":2,"id":"two","method":"m"}`, `{"jsonrpc":"2.0","id":"two",` + invalid + `"json-rpc member \"jsonrpc\" is not a string"}}}`},
		{"\x00", ""},
		{`hello from the agent's stdout`, ""},
		{`{"id":1,"method":"m","params":{"a":tru}}`, parse + `"invalid JSON at offset 35: invalid literal"}}}`},
		{`{"jsonrpc":"2.0","id":{"a":1},"result":1}`, ""}, // a response: never answered
		{`{"result":1}`, ""},
	}
	for _, c := range cases {
		p.send(c.line)
		if c.reply == "" {
			continue
		}
		if got := p.recv(); !strings.HasPrefix(got, c.reply) {
			t.Fatalf("%s:\n got: %s\nwant: %s…", c.line, got, c.reply)
		}
	}
	p.send(`{"id":1,"method":"m","params":[1]}`)
	p.expectLine(`{"jsonrpc":"2.0","id":1,"result":[1]}`)
	if !p.logs.contains("failed to parse incoming message") {
		t.Fatal("malformed lines must be logged")
	}
}

// TestWhyBatchAndInvalidIDsAnswered (issue 22): a batch used to get no reply
// at all, so the peer waited forever, and requests whose id is an object,
// an array or true were answered echoing that id. A batch (empty or not)
// now gets one -32600 with a null id; an invalid id gets -32600 with a null
// id and the handler is not called; so do a top-level null and an empty
// object.
func TestWhyBatchAndInvalidIDsAnswered(t *testing.T) {
	called := make(chan string, 8)
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		called <- method
		return params, nil
	})
	const (
		batch   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"batch requests are not supported"}}}`
		badID   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"json-rpc id must be string, number, or null"}}}`
		nothing = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"json-rpc message has neither method nor result nor error"}}}`
	)
	for _, c := range []struct{ line, reply string }{
		{`[{"jsonrpc":"2.0","id":91,"method":"session/prompt","params":{}}]`, batch},
		{`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`, batch},
		{`[]`, batch},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`, badID},
		{`{"jsonrpc":"2.0","id":[1],"method":"m"}`, badID},
		{`{"jsonrpc":"2.0","id":true,"method":"m"}`, badID},
		{`{"jsonrpc":"2.0","id":false,"method":"m","params":1}`, badID},
		{`null`, nothing},
		{`{}`, nothing},
		{`{"jsonrpc":"2.0"}`, nothing},
	} {
		p.send(c.line)
		if got := p.recv(); got != c.reply {
			t.Fatalf("%s:\n got: %s\nwant: %s", c.line, got, c.reply)
		}
	}
	select {
	case m := <-called:
		t.Fatalf("handler called for %q", m)
	default:
	}
	p.send(`{"jsonrpc":"2.0","id":"ok","method":"m","params":2}`)
	p.expectLine(`{"jsonrpc":"2.0","id":"ok","result":2}`)
}

// TestMalformedLogThrottled: a peer that sends garbage in a loop gets at
// most malformedLogBurst log lines per window, and the next line logged
// says how many were left out.
func TestMalformedLogThrottled(t *testing.T) {
	var th logThrottle
	now := time.Unix(1000, 0)
	logged := 0
	for range 1000 {
		if ok, _ := th.allow(now); ok {
			logged++
		}
	}
	if logged != malformedLogBurst {
		t.Fatalf("logged %d of 1000 in one window, want %d", logged, malformedLogBurst)
	}
	ok, suppressed := th.allow(now.Add(malformedLogWindow))
	if !ok || suppressed != 1000-malformedLogBurst {
		t.Fatalf("next window: ok=%v suppressed=%d, want true %d", ok, suppressed, 1000-malformedLogBurst)
	}
}

func TestWireKeysMatchLikeEncodingJSON(t *testing.T) {
	p := newRawPeer(t, echoHandler)
	// Case-insensitive keys, escaped keys and last-wins duplicates.
	p.send(`{"JSONRPC":"2.0","ID":3,"Method":"m","PARAMS":"p"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":3,"result":"p"}`)
	p.send(`{"id":1,"id":4,"m\u0065thod":"m","params":1,"params":2}`)
	p.expectLine(`{"jsonrpc":"2.0","id":4,"result":2}`)
}

func TestWireFramingBlankAndCRLFAndFinalLine(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	inR, inW := io.Pipe()
	conn := NewConnection(func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
		mu.Lock()
		seen = append(seen, method)
		n := len(seen)
		mu.Unlock()
		if n == 3 {
			close(done)
		}
		return nil, nil
	}, io.Discard, inR)
	conn.SetLogger(quietLogger())
	go func() {
		_, _ = io.WriteString(inW, "\n  \n\t\r\n{\"method\":\"a\"}\r\n\n{\"method\":\"b\"}\n{\"method\":\"c\"}")
		_ = inW.Close()
	}()
	waitChan(t, done, "three notifications")
	waitChan(t, conn.Done(), "disconnect")
	if !errors.Is(conn.Err(), ErrPeerConnectionClosed) || conn.Err().Error() != "peer connection closed" {
		t.Fatalf("Err = %v", conn.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "a,b,c" {
		t.Fatalf("seen = %v", seen)
	}
}

func TestLineReaderBoundary(t *testing.T) {
	const max = 100
	exact := strings.Repeat("x", max)
	input := exact + "\n" + exact + "\r\n" + exact + "y\n"
	lr := newLineReader(strings.NewReader(input), max)
	for i := 0; i < 2; i++ {
		line, err := lr.next()
		if err != nil || string(line) != exact {
			t.Fatalf("line %d: %q, %v", i, line, err)
		}
	}
	if _, err := lr.next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	// Lines longer than the read buffer are accumulated.
	big := strings.Repeat("z", 3*readBufferSize+5)
	lr = newLineReader(strings.NewReader(big+"\n"+big), len(big))
	for i := 0; i < 2; i++ {
		line, err := lr.next()
		if string(line) != big || (i == 0 && err != nil) || (i == 1 && !errors.Is(err, io.EOF)) {
			t.Fatalf("big line %d: len %d, %v", i, len(line), err)
		}
	}
	lr = newLineReader(strings.NewReader(big+"x\n"), len(big))
	if _, err := lr.next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

// TestWireFrameLimit64MiB sends a line of exactly 64 MiB (accepted) and one
// byte more (the connection closes with ErrLineTooLong).
func TestWireFrameLimit64MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB frames")
	}
	build := func(size int) []byte {
		prefix := `{"jsonrpc":"2.0","method":"big","params":"`
		line := bytes.Repeat([]byte("a"), size+1)
		copy(line, prefix)
		copy(line[size-2:], "\"}\n")
		return line
	}
	got := make(chan int, 1)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	conn := NewConnection(func(_ context.Context, _ string, params json.RawMessage) (any, *RequestError) {
		got <- len(params)
		return nil, nil
	}, io.Discard, inR)
	conn.SetLogger(quietLogger())
	t.Cleanup(func() { _ = conn.Close(); _ = inW.Close() })
	go func() {
		_, _ = inW.Write(build(maxLineBytes))
		_, _ = inW.Write(build(maxLineBytes + 1))
	}()
	// Reading and decoding 64 MiB under -race on a loaded machine can take
	// longer than one hang guard; three are still a hang guard.
	var n int
	select {
	case n = <-got:
	case <-time.After(3 * hangGuard):
		t.Fatal("timed out waiting for 64 MiB notification")
	}
	if n != maxLineBytes-len(`{"jsonrpc":"2.0","method":"big","params":}`) {
		t.Fatalf("params length %d", n)
	}
	select {
	case <-conn.Done():
	case <-time.After(3 * hangGuard):
		t.Fatal("timed out waiting for disconnect on the oversized line")
	}
	if !errors.Is(conn.Err(), ErrLineTooLong) || conn.Err().Error() != "json-rpc message line exceeds 67108864 bytes" {
		t.Fatalf("Err = %v", conn.Err())
	}
}

func TestWireInboundCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	p := newRawPeer(t, func(ctx context.Context, _ string, _ json.RawMessage) (any, *RequestError) {
		started <- struct{}{}
		<-ctx.Done()
		if context.Cause(ctx) != context.Canceled {
			return nil, NewInternalError(errorData("unexpected cause"))
		}
		return nil, toRequestError(ctx.Err())
	})
	p.send(`{"jsonrpc":"2.0","id":5,"method":"slow"}`)
	waitChan(t, started, "handler start")
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":99}}`) // unknown: ignored
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}`)
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5.0}}`)
	p.expectLine(`{"jsonrpc":"2.0","id":5,"error":{"code":-32800,"message":"Request cancelled","data":{"error":"context canceled"}}}`)
	if !p.logs.contains("received $/cancel_request without requestId") {
		t.Fatal("missing log for $/cancel_request without requestId")
	}
}

func TestWireOutboundCancel(t *testing.T) {
	p := newRawPeer(t, echoHandler)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := SendRequest[any](p.conn, ctx, "slow", nil)
		done <- err
	}()
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	cancel()
	err := waitChan(t, done, "cancelled SendRequest")
	var re *RequestError
	if !errors.As(err, &re) || re.Code != -32800 {
		t.Fatalf("err = %v, want -32800", err)
	}
	p.expectLine(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`)
	// A late response is dropped and the connection keeps working.
	p.send(`{"jsonrpc":"2.0","id":1,"result":1}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"m","params":"ok"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)

	// A deadline becomes -32603.
	dctx, dcancel := context.WithTimeout(context.Background(), 0)
	defer dcancel()
	_, err = SendRequest[any](p.conn, dctx, "slow", nil)
	if !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err = %v, want -32603 deadline", err)
	}
}

func TestCancelQueueBounded(t *testing.T) {
	// A writer that blocks keeps the cancel sender busy; the queue must not
	// grow past its bound and callers must not block.
	block := make(chan struct{})
	w := writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "$/cancel_request") {
			<-block
		}
		return len(p), nil
	})
	inR, inW := io.Pipe()
	conn := NewConnection(nil, w, inR)
	conn.SetLogger(quietLogger())
	defer func() { close(block); _ = inW.Close(); _ = conn.Close() }()
	for i := uint64(1); i <= maxPendingCancelRequests+10; i++ {
		conn.queueCancelRequest(i) // must not block although the writer does
	}
	conn.mu.Lock()
	n := len(conn.cancelQueue)
	conn.mu.Unlock()
	if n > maxPendingCancelRequests {
		t.Fatalf("cancel queue length %d exceeds %d", n, maxPendingCancelRequests)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestWireResponseBarrier(t *testing.T) {
	gate := make(chan struct{})
	var handled atomic.Int32
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "session/update" {
			<-gate
			handled.Add(1)
			return nil, nil
		}
		return params, nil
	})
	done := make(chan int32, 1)
	go func() {
		_, err := SendRequest[any](p.conn, context.Background(), "session/prompt", nil)
		if err != nil {
			t.Error(err)
		}
		done <- handled.Load()
	}()
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"session/prompt"}`)
	for i := 0; i < 3; i++ {
		p.send(`{"jsonrpc":"2.0","method":"session/update","params":{}}`)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
	// A request sent after the response proves the reader has processed it.
	p.send(`{"jsonrpc":"2.0","id":"probe","method":"echo","params":1}`)
	p.expectLine(`{"jsonrpc":"2.0","id":"probe","result":1}`)
	select {
	case <-done:
		t.Fatal("SendRequest returned before the pre-response notifications were handled")
	default:
	}
	// A notification after the response is not awaited.
	p.send(`{"jsonrpc":"2.0","method":"session/update","params":{}}`)
	close(gate)
	if n := waitChan(t, done, "barrier release"); n < 3 {
		t.Fatalf("SendRequest returned after %d notifications, want >= 3", n)
	}
}

// answerBehindNotification calls "m" on p's connection, then has the peer
// send notification "n" followed by the answer, and returns once a probe
// request shows the connection has read both: the answer now waits behind
// the handler of "n". The call's error arrives on the returned channel.
func answerBehindNotification(p *rawPeer) <-chan error {
	p.t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := SendRequest[any](p.conn, context.Background(), "m", nil)
		done <- err
	}()
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
	p.send(`{"method":"n"}`)
	p.send(`{"id":1,"result":1}`)
	p.send(`{"id":"probe","method":"echo","params":1}`)
	p.expectLine(`{"jsonrpc":"2.0","id":"probe","result":1}`)
	return done
}

// A peer that answers and exits: the notifications it sent before the
// answer are handled, then the call returns the answer (upstream, and this
// SDK before, failed the call with "peer disconnected while waiting for
// pre-response notifications").
func TestWireAnswerThenEOFDeliversResponse(t *testing.T) {
	gate := make(chan struct{})
	var handled atomic.Int32
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "n" {
			<-gate
			handled.Add(1)
		}
		return params, nil
	})
	done := answerBehindNotification(p)
	_ = p.in.Close()
	waitChan(t, p.conn.Done(), "end of file")
	close(gate)
	if err := waitChan(t, done, "response after the barrier"); err != nil {
		t.Fatalf("err = %v", err)
	}
	if handled.Load() != 1 {
		t.Fatal("response handed back before the notification")
	}
}

// Close during the barrier still ends the wait with the upstream error.
func TestWireBarrierClose(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "n" {
			<-gate
		}
		return params, nil
	})
	done := answerBehindNotification(p)
	_ = p.conn.Close()
	err := waitChan(t, done, "barrier disconnect")
	if !errors.Is(err, ErrPeerDisconnected) || err.Error() != `{"code":-32603,"message":"Internal error","data":{"error":"peer disconnected while waiting for pre-response notifications"}}` {
		t.Fatalf("err = %v", err)
	}
}

func TestWireDisconnectFailsPendingAndDrainsQueue(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	var liveCtx atomic.Int32
	p := newRawPeer(t, func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "first" {
			<-gate
		}
		if ctx.Err() == nil {
			liveCtx.Add(1)
		}
		mu.Lock()
		seen = append(seen, method)
		mu.Unlock()
		return nil, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := SendRequest[any](p.conn, context.Background(), "m", nil)
		done <- err
	}()
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
	p.send(`{"method":"first"}`)
	p.send(`{"method":"second"}`)
	p.send(`{"method":"third"}`)
	_ = p.in.Close()
	err := waitChan(t, done, "pending call failure")
	var re *RequestError
	if !errors.Is(err, ErrPeerDisconnected) || !errors.As(err, &re) || re.Code != -32603 ||
		err.Error() != `{"code":-32603,"message":"Internal error","data":{"error":"peer disconnected before response"}}` {
		t.Fatalf("err = %v", err)
	}
	// After disconnect, requests fail the same way without writing.
	if _, err := SendRequest[any](p.conn, context.Background(), "m", nil); !errors.Is(err, ErrPeerDisconnected) {
		t.Fatalf("after disconnect: %v", err)
	}
	close(gate)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := p.conn.Wait(ctx); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "first,second,third" || liveCtx.Load() != 3 {
		t.Fatalf("seen %v with %d live contexts", seen, liveCtx.Load())
	}
	if !p.logs.contains("connection closed", "peer connection closed") {
		t.Fatal("missing connection closed log")
	}
}

func TestWireNotificationQueueOverflowOptIn(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	var count atomic.Int32
	p := newRawPeer(t, func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
		if method == "first" {
			started <- struct{}{}
			<-gate
		}
		count.Add(1)
		return nil, nil
	}, WithMaxQueuedNotifications(2), WithCloseOnNotificationOverflow())
	p.send(`{"method":"first"}`)
	waitChan(t, started, "first notification")
	p.send(`{"method":"q1"}`)
	p.send(`{"method":"q2"}`)
	p.send(`{"method":"overflow"}`)
	waitChan(t, p.conn.Done(), "overflow close")
	if !errors.Is(p.conn.Err(), ErrNotificationQueueOverflow) || !strings.Contains(p.conn.Err().Error(), "notification queue overflow") {
		t.Fatalf("Err = %v", p.conn.Err())
	}
	close(gate)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := p.conn.Wait(ctx); !errors.Is(err, ErrNotificationQueueOverflow) {
		t.Fatalf("Wait = %v", err)
	}
	if count.Load() != 3 {
		t.Fatalf("handled %d notifications, want the 3 accepted ones", count.Load())
	}
	if !p.logs.contains("failed to queue notification; closing connection", "capacity=2") {
		t.Fatal("missing overflow log")
	}
}

func TestNotificationRingGrowsAndShrinks(t *testing.T) {
	var q notificationRing
	const limit = 1000
	next, want := uint64(1), uint64(1)
	for round := 0; round < 3; round++ {
		for q.len() < limit {
			q.push(queuedNotification{seq: next}, limit)
			next++
			if next%7 == 0 {
				if got := q.pop().seq; got != want {
					t.Fatalf("pop %d, want %d", got, want)
				}
				want++
			}
		}
		if len(q.buf) > limit {
			t.Fatalf("ring grew to %d beyond its limit %d", len(q.buf), limit)
		}
		for q.len() > 0 {
			if got := q.pop().seq; got != want {
				t.Fatalf("pop %d, want %d", got, want)
			}
			want++
		}
		if q.buf != nil {
			t.Fatalf("ring kept %d slots after draining", len(q.buf))
		}
	}
}

func TestWireOrderedNotificationsConcurrentRequests(t *testing.T) {
	const n = 500
	var mu sync.Mutex
	var seen []int
	release := make(chan struct{})
	var inRequest atomic.Int32
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "req" {
			if inRequest.Add(1) == 2 {
				close(release) // two requests run at the same time
			}
			<-release
			return params, nil
		}
		var i int
		_ = json.Unmarshal(params, &i)
		mu.Lock()
		seen = append(seen, i)
		mu.Unlock()
		return nil, nil
	}, WithMaxQueuedNotifications(n))
	p.send(`{"id":1,"method":"req","params":1}`)
	p.send(`{"id":2,"method":"req","params":2}`)
	for i := 0; i < n; i++ {
		p.send(fmt.Sprintf(`{"method":"note","params":%d}`, i))
	}
	got := map[string]bool{p.recv(): true, p.recv(): true}
	if !got[`{"jsonrpc":"2.0","id":1,"result":1}`] || !got[`{"jsonrpc":"2.0","id":2,"result":2}`] {
		t.Fatalf("responses %v", got)
	}
	// Drain: a request after the notifications, answered after the barrier.
	done := make(chan error, 1)
	go func() { done <- p.conn.SendRequestNoResult(context.Background(), "x", nil) }()
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
	p.send(`{"id":1,"result":null}`)
	if err := waitChan(t, done, "barrier"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("saw %d notifications", len(seen))
	}
	for i, v := range seen {
		if v != i {
			t.Fatalf("notification %d handled at position %d", v, i)
		}
	}
}

func TestWirePanicRecovered(t *testing.T) {
	got := make(chan string, 4)
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		switch method {
		case "boom":
			panic("kaboom")
		case "note-boom":
			panic(errors.New("note kaboom"))
		case "note":
			got <- method
		}
		return params, nil
	})
	p.send(`{"id":1,"method":"boom"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"error":"panic in handler for boom: kaboom"}}}`)
	p.send(`{"method":"note-boom"}`)
	p.send(`{"method":"note"}`)
	waitChan(t, got, "notification after a panicking one")
	p.send(`{"id":2,"method":"echo","params":"alive"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":2,"result":"alive"}`)
	if !p.logs.contains("panic in method handler", "kaboom", "goroutine") {
		t.Fatal("panic must be logged with its stack")
	}
}

type panickingResult struct{}

func (panickingResult) MarshalJSON() ([]byte, error) { panic("marshal boom") }

func TestWirePanicInResultMarshal(t *testing.T) {
	p := newRawPeer(t, func(context.Context, string, json.RawMessage) (any, *RequestError) {
		return panickingResult{}, nil
	})
	p.send(`{"id":1,"method":"m"}`)
	line := p.recv()
	if !strings.Contains(line, `"code":-32603`) || !strings.Contains(line, "marshal boom") {
		t.Fatalf("line = %s", line)
	}
}

func TestWireReentrantNotificationHandler(t *testing.T) {
	var conn *Connection
	result := make(chan string, 1)
	p := newRawPeer(t, func(ctx context.Context, method string, _ json.RawMessage) (any, *RequestError) {
		if method == "note" {
			// Calls back into the same connection from a notification handler.
			v, err := SendRequest[string](conn, ctx, "fs/read_text_file", nil)
			if err != nil {
				result <- err.Error()
				return nil, nil
			}
			result <- v
		}
		return nil, nil
	})
	conn = p.conn
	p.send(`{"method":"note"}`)
	p.send(`{"method":"later"}`) // queued behind the running handler
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}`)
	p.send(`{"id":1,"result":"contents"}`)
	if got := waitChan(t, result, "reentrant SendRequest"); got != "contents" {
		t.Fatalf("got %q", got)
	}
}

func TestWireInflightRequestLimit(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 3)
	p := newRawPeer(t, func(_ context.Context, _ string, params json.RawMessage) (any, *RequestError) {
		started <- struct{}{}
		<-gate
		return params, nil
	}, WithMaxInflightRequests(1))
	p.send(`{"id":1,"method":"slow","params":1}`)
	waitChan(t, started, "first request")
	p.send(`{"id":2,"method":"slow","params":2}`) // waits for the slot
	close(gate)
	// The slot passes to request 2 before request 1's reply is written.
	got := map[string]bool{p.recv(): true, p.recv(): true}
	if !got[`{"jsonrpc":"2.0","id":1,"result":1}`] || !got[`{"jsonrpc":"2.0","id":2,"result":2}`] {
		t.Fatalf("replies %v", got)
	}
	p.send(`{"id":3,"method":"slow","params":3}`)
	p.expectLine(`{"jsonrpc":"2.0","id":3,"result":3}`)
}

func TestWireNilHandler(t *testing.T) {
	p := newRawPeer(t, nil)
	p.send(`{"method":"note"}`)
	p.send(`{"id":1,"method":"x"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found","data":{"method":"x"}}}`)
}

func TestWireNotificationErrorLogging(t *testing.T) {
	done := make(chan struct{})
	p := newRawPeer(t, func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
		if method == "last" {
			close(done)
			return nil, nil
		}
		return nil, NewMethodNotFound(method)
	})
	p.send(`{"method":"_ext/silent"}`)
	p.send(`{"method":"foo/bar"}`)
	p.send(`{"method":"last"}`)
	waitChan(t, done, "notifications")
	if !p.logs.contains("failed to handle notification", "method=foo/bar") {
		t.Fatal("unknown notification must be logged")
	}
	if p.logs.contains("_ext/silent") {
		t.Fatal("-32601 for a _ notification must stay silent")
	}
}

func TestConnectionCloseWaitErr(t *testing.T) {
	a, b := pipePair(t, echoHandler, echoHandler)
	if a.Err() != nil {
		t.Fatalf("Err before close = %v", a.Err())
	}
	if _, err := SendRequest[int](a, context.Background(), "m", 5); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	waitChan(t, a.Done(), "Done after Close")
	if !errors.Is(a.Err(), ErrConnectionClosed) {
		t.Fatalf("Err = %v", a.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := a.Wait(ctx); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	// The peer sees EOF.
	waitChan(t, b.Done(), "peer Done")
	if err := b.Wait(ctx); err != nil {
		t.Fatalf("peer Wait = %v", err)
	}
	if !errors.Is(b.Err(), ErrPeerConnectionClosed) {
		t.Fatalf("peer Err = %v", b.Err())
	}
	// Wait honours its ctx.
	c := NewConnection(nil, io.Discard, blockingReader{})
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if err := c.Wait(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a live connection = %v", err)
	}
}

type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

func TestConnectionOverOSPipes(t *testing.T) {
	aR, bW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	bR, aW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var notes atomic.Int32
	server := NewConnection(func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "note" {
			notes.Add(1)
			return nil, nil
		}
		return params, nil
	}, bW, bR)
	client := NewConnection(nil, aW, aR)
	server.SetLogger(quietLogger())
	client.SetLogger(quietLogger())
	for i := 0; i < 100; i++ {
		if err := client.SendNotification(context.Background(), "note", i); err != nil {
			t.Fatal(err)
		}
	}
	got, err := SendRequest[[]int](client, context.Background(), "echo", []int{1, 2, 3})
	if err != nil || len(got) != 3 {
		t.Fatalf("got %v, %v", got, err)
	}
	_ = client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := server.Wait(ctx); err != nil {
		t.Fatalf("server Wait = %v", err)
	}
	if notes.Load() != 100 {
		t.Fatalf("server saw %d notifications", notes.Load())
	}
	_ = server.Close()
	if err := client.Wait(ctx); err != nil {
		t.Fatalf("client Wait = %v", err)
	}
}

func TestConnectionNestedRequests(t *testing.T) {
	// A request handler on b calls back into a before answering.
	var b *Connection
	a, b := pipePair(t, echoHandler, func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if !isInboundRequest(ctx) {
			return nil, NewInternalError(errorData("not marked as a request"))
		}
		inner, err := SendRequest[string](b, ctx, "inner", "from-b")
		if err != nil {
			return nil, toRequestError(err)
		}
		return inner + "+outer", nil
	})
	got, err := SendRequest[string](a, context.Background(), "outer", nil)
	if err != nil || got != "from-b+outer" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestWireNotificationQueueByteBudget(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	p := newRawPeer(t, func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
		if method == "first" {
			started <- struct{}{}
			<-gate
		}
		return nil, nil
	}, WithMaxQueuedNotificationBytes(100), WithCloseOnNotificationOverflow())
	defer close(gate)
	big := `"` + strings.Repeat("x", 58) + `"` // 60 bytes of params
	p.send(`{"method":"first","params":` + big + `}`)
	waitChan(t, started, "first notification")
	p.send(`{"method":"q1","params":` + big + `}`) // queued: 60 bytes
	p.send(`{"method":"q2","params":` + big + `}`) // 120 > 100: overflow
	waitChan(t, p.conn.Done(), "byte-budget overflow")
	if !errors.Is(p.conn.Err(), ErrNotificationQueueOverflow) {
		t.Fatalf("Err = %v", p.conn.Err())
	}
	if !p.logs.contains("failed to queue notification; closing connection", "queued_bytes=60", "max_bytes=100") {
		t.Fatal("missing overflow log with the byte budget")
	}
}

func TestWriteWaitHonoursContextAndClose(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var first atomic.Bool
	w := writerFunc(func(p []byte) (int, error) {
		if first.CompareAndSwap(false, true) {
			entered <- struct{}{}
			<-release // the peer stops reading
		}
		return len(p), nil
	})
	inR, inW := io.Pipe()
	defer inW.Close()
	conn := NewConnection(nil, w, inR)
	conn.SetLogger(quietLogger())
	blocked := make(chan error, 1)
	go func() { blocked <- conn.SendNotification(context.Background(), "stuck", nil) }()
	waitChan(t, entered, "first write")

	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error, 2)
	go func() { waiting <- conn.SendNotification(ctx, "n", nil) }()
	go func() {
		_, err := SendRequest[any](conn, ctx, "r", nil)
		waiting <- err
	}()
	cancel()
	for i := 0; i < 2; i++ {
		err := waitChan(t, waiting, "writers giving up on their ctx")
		var re *RequestError
		if !errors.As(err, &re) || (re.Code != -32603 && re.Code != -32800) {
			t.Fatalf("err = %v", err)
		}
	}
	conn.mu.Lock()
	pending := len(conn.state.pending)
	conn.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d pending calls left behind", pending)
	}
	// Close releases writers that wait without a deadline.
	later := make(chan error, 1)
	go func() { later <- conn.SendNotification(context.Background(), "later", nil) }()
	_ = conn.Close()
	if err := waitChan(t, later, "writer released by Close"); err == nil || !strings.Contains(err.Error(), "connection closed") {
		t.Fatalf("err = %v", err)
	}
	// Close also ends the write the peer never consumed.
	if err := waitChan(t, blocked, "blocked write released by Close"); err == nil || !strings.Contains(err.Error(), "connection closed") {
		t.Fatalf("first write: %v", err)
	}
	close(release)
}

func TestLargeQueueBoundAllocatesNothingUpFront(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	conn := NewConnection(nil, io.Discard, r, WithMaxQueuedNotifications(131072))
	defer conn.Close()
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.state.queue.buf != nil || conn.opts.maxQueuedNotifications != 131072 {
		t.Fatalf("queue preallocated %d slots (bound %d)", len(conn.state.queue.buf), conn.opts.maxQueuedNotifications)
	}
	if WithMaxQueuedNotifications(0) == nil || applyConnectionOptions([]ConnectionOption{nil, WithMaxQueuedNotifications(-1)}).maxQueuedNotifications != defaultMaxQueuedNotifications {
		t.Fatal("n <= 0 must select the default; nil options are skipped")
	}
}

// TestWhyReentrantWithTimeoutOfItsOwn: a notification handler that calls
// back with a timeout of its own (a common pattern) used to wait for the
// barrier, i.e. for itself, until that timeout (issue 22). The rule (issue
// 34): a handler makes the calls it waits for with its ctx, here with the
// timeout derived from it; the call skips the barrier and returns with the
// answer. The same call with context.Background() and a timeout is the
// caller's error (TestNotificationHandlerCallWithForeignContextIsHeldBehindItself).
func TestWhyReentrantWithTimeoutOfItsOwn(t *testing.T) {
	var conn *Connection
	result := make(chan string, 1)
	p := newRawPeer(t, func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "note" {
			callCtx, cancel := context.WithTimeout(ctx, 3*hangGuard)
			defer cancel()
			got, err := SendRequest[string](conn, callCtx, "fs/read_text_file", nil)
			if err != nil {
				got = err.Error()
			}
			result <- got
			return nil, nil
		}
		return params, nil
	})
	conn = p.conn
	p.send(`{"method":"note"}`)
	p.expectLine(`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}`)
	p.send(`{"method":"later"}`) // queued behind the handler, before the answer
	p.send(`{"id":1,"result":"contents"}`)
	if got := waitChan(t, result, "the handler's call"); got != "contents" {
		t.Fatalf("got %q", got)
	}
}

// TestConnectionConcurrentTraffic runs requests both ways from many
// goroutines while notifications stream, under the race detector.
func TestConnectionConcurrentTraffic(t *testing.T) {
	var aNotes, bNotes atomic.Int64
	var orderErr atomic.Value
	handler := func(counter *atomic.Int64) MethodHandler {
		var last int64 = -1
		return func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
			if method == "note" {
				var n int64
				_ = json.Unmarshal(params, &n)
				if n != last+1 {
					orderErr.Store(fmt.Sprintf("notification %d after %d", n, last))
				}
				last = n
				counter.Add(1)
				return nil, nil
			}
			return params, nil
		}
	}
	a, b := pipePair(t, handler(&aNotes), handler(&bNotes))
	const workers, calls, notes = 8, 40, 300
	var wg sync.WaitGroup
	for _, pair := range [][2]*Connection{{a, b}, {b, a}} {
		from := pair[0]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < notes; i++ {
				if err := from.SendNotification(context.Background(), "note", i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < calls; i++ {
					want := fmt.Sprintf("w%d-%d", w, i)
					got, err := SendRequest[string](from, context.Background(), "echo", want)
					if err != nil || got != want {
						t.Errorf("echo %s: %q, %v", want, got, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	// A last request on each side passes the barrier only after every
	// notification sent before it was handled.
	for _, pair := range [][2]*Connection{{a, b}, {b, a}} {
		if _, err := SendRequest[int](pair[0], context.Background(), "echo", 1); err != nil {
			t.Fatal(err)
		}
	}
	if v := orderErr.Load(); v != nil {
		t.Fatal(v)
	}
	if aNotes.Load() != notes || bNotes.Load() != notes {
		t.Fatalf("notifications: a got %d, b got %d, want %d each", aNotes.Load(), bNotes.Load(), notes)
	}
}

func TestWireResultDecoding(t *testing.T) {
	p := newRawPeer(t, echoHandler)
	type answer struct {
		N int `json:"n"`
	}
	cases := []struct {
		reply   string
		want    answer
		errCode int
	}{
		{`{"id":%d,"result":{"n":3}}`, answer{N: 3}, 0},
		{`{"id":%d}`, answer{}, 0},                         // missing result: zero value, no error
		{`{"id":%d,"result":null}`, answer{}, 0},           // null result: zero value
		{`{"id":%d,"result":{"n":"x"}}`, answer{}, -32603}, // does not decode into T
		{`{"id":%d,"error":{"code":-32002,"message":"Resource not found"},"result":{"n":1}}`, answer{}, -32002},
	}
	for i, c := range cases {
		id := i + 1
		type outcome struct {
			v   answer
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			v, err := SendRequest[answer](p.conn, context.Background(), "q", nil)
			done <- outcome{v, err}
		}()
		p.expectLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"q"}`, id))
		p.send(fmt.Sprintf(c.reply, id))
		got := waitChan(t, done, "reply")
		var re *RequestError
		switch {
		case c.errCode == 0 && got.err != nil:
			t.Errorf("case %d: %v", i, got.err)
		case c.errCode != 0 && (!errors.As(got.err, &re) || re.Code != c.errCode):
			t.Errorf("case %d: err %v, want code %d", i, got.err, c.errCode)
		case got.v != c.want:
			t.Errorf("case %d: value %+v, want %+v", i, got.v, c.want)
		}
	}
}
