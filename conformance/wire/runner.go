package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// waitGuard bounds every wait of a script. It is a hang guard, not an
// assertion: a wait that expires is recorded in the transcript as a note
// (so the other build's transcript differs) and the script goes on.
const waitGuard = 10 * time.Second

// blockGuard bounds a handler scripted to block until its context ends.
const blockGuard = 10 * time.Second

// maxInlineParams is the size above which a recorded value is replaced by
// its length and SHA-256 (big-frame scenarios), keeping transcripts small
// without hiding any byte difference.
const maxInlineParams = 4096

// caller performs one outbound call on the SDK connection.
type caller func(ctx context.Context, step Step) (any, error)

// recorder writes transcript records to stdout as JSON lines, one write
// per record, so a crash keeps everything recorded before it.
type recorder struct {
	mu      sync.Mutex
	out     io.Writer
	lines   int
	events  int
	changed chan struct{}
}

func newRecorder(out io.Writer) *recorder {
	return &recorder{out: out, changed: make(chan struct{})}
}

func (r *recorder) write(kind string, v any) {
	b, err := json.Marshal(map[string]any{kind: v})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"note": "harness: unrecordable " + kind + ": " + err.Error()})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.out.Write(append(b, '\n'))
	switch kind {
	case "line":
		r.lines++
	case "event":
		r.events++
	default:
		return
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) counts() (lines, events int, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines, r.events, r.changed
}

// waitCount waits until count() reaches target or the guard expires.
func (r *recorder) waitCount(target int, line bool) bool {
	deadline := time.NewTimer(waitGuard)
	defer deadline.Stop()
	for {
		l, e, ch := r.counts()
		n := e
		if line {
			n = l
		}
		if n >= target {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// runningCall is an outbound call started by a Call step.
type runningCall struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// runner executes one scenario against one SDK connection.
type runner struct {
	sc  *Scenario
	rec *recorder

	dispatch caller
	done     <-chan struct{}

	toSDK     *io.PipeWriter
	sendQueue chan []byte
	sendDone  chan struct{}

	mu         sync.Mutex
	calls      map[string]*runningCall
	invocation map[string]int

	lineTarget  int
	eventTarget int
}

func newRunner(sc *Scenario, rec *recorder) *runner {
	return &runner{
		sc:         sc,
		rec:        rec,
		calls:      map[string]*runningCall{},
		invocation: map[string]int{},
		sendQueue:  make(chan []byte, 1024),
		sendDone:   make(chan struct{}),
	}
}

// runScenario wires a fresh SDK connection to pipes and plays the script.
func runScenario(sc *Scenario, out io.Writer) {
	rec := newRecorder(out)
	r := newRunner(sc, rec)

	sdkIn, harnessOut := io.Pipe()
	harnessIn, sdkOut := io.Pipe()
	r.toSDK = harnessOut

	switch sc.Side {
	case "client":
		conn := acp.NewClientSideConnection(newScriptedClient(r), sdkOut, sdkIn)
		r.dispatch = clientCaller(conn)
		r.done = conn.Done()
	default:
		conn := acp.NewAgentSideConnection(newScriptedAgent(r), sdkOut, sdkIn)
		r.dispatch = agentCaller(conn)
		r.done = conn.Done()
	}

	go r.readSDK(harnessIn)
	go r.writeSDK()

	for i, step := range sc.Steps {
		r.step(i, step)
	}
	r.closeInput(-1)
	// Lines or events that were not awaited still get a moment to appear,
	// so a build that sends something the script did not expect shows it.
	time.Sleep(50 * time.Millisecond)
	if l, _, _ := rec.counts(); l > r.lineTarget {
		rec.write("note", fmt.Sprintf("lines not awaited by the script: %d", l-r.lineTarget))
	}
}

// readSDK records every line the SDK writes.
func (r *runner) readSDK(in io.Reader) {
	br := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			r.rec.write("line", summarize(bytes.TrimSuffix(line, []byte("\n"))))
		}
		if err != nil {
			return
		}
	}
}

// writeSDK writes queued frames in order; a nil frame closes the stream.
func (r *runner) writeSDK() {
	defer close(r.sendDone)
	for frame := range r.sendQueue {
		if frame == nil {
			_ = r.toSDK.Close()
			return
		}
		if _, err := r.toSDK.Write(frame); err != nil {
			r.rec.write("note", "harness: write to SDK failed: "+err.Error())
			return
		}
	}
}

func (r *runner) step(i int, s Step) {
	switch {
	case s.Send != nil:
		var buf bytes.Buffer
		if err := json.Compact(&buf, s.Send); err != nil {
			r.rec.write("note", fmt.Sprintf("harness: step %d: bad send JSON: %v", i, err))
			return
		}
		buf.WriteByte('\n')
		for n := max(s.Repeat, 1); n > 0; n-- {
			r.sendQueue <- buf.Bytes()
		}
	case s.SendRaw != nil:
		frame := []byte(*s.SendRaw)
		if !s.NoNewline {
			frame = append(frame, '\n')
		}
		r.sendQueue <- frame
	case s.SendBig > 0:
		r.sendQueue <- bigFrame(s.SendBig)
	case s.Call != "":
		r.startCall(s)
	case s.Cancel != "":
		r.mu.Lock()
		c := r.calls[s.Cancel]
		r.mu.Unlock()
		if c == nil {
			r.rec.write("note", fmt.Sprintf("harness: step %d: no call %q", i, s.Cancel))
			return
		}
		c.cancel()
	case s.Await != "":
		r.mu.Lock()
		c := r.calls[s.Await]
		r.mu.Unlock()
		if c == nil {
			r.rec.write("note", fmt.Sprintf("harness: step %d: no call %q", i, s.Await))
			return
		}
		select {
		case <-c.done:
		case <-time.After(waitGuard):
			r.rec.write("note", fmt.Sprintf("step %d: call %q did not return", i, s.Await))
		}
	case s.Expect > 0:
		r.lineTarget += s.Expect
		if !r.rec.waitCount(r.lineTarget, true) {
			l, _, _ := r.rec.counts()
			r.rec.write("note", fmt.Sprintf("step %d: expected %d lines in total, got %d", i, r.lineTarget, l))
			r.lineTarget = l
		}
		if s.Unordered {
			r.rec.write("sortLast", s.Expect)
		}
	case s.Events > 0:
		r.eventTarget += s.Events
		if !r.rec.waitCount(r.eventTarget, false) {
			_, e, _ := r.rec.counts()
			r.rec.write("note", fmt.Sprintf("step %d: expected %d events in total, got %d", i, r.eventTarget, e))
			r.eventTarget = e
		}
		if s.Unordered {
			r.rec.write("sortLastEvents", s.Events)
		}
	case s.Close:
		r.closeInput(i)
	default:
		r.rec.write("note", fmt.Sprintf("harness: step %d does nothing", i))
	}
}

// closeInput ends the harness→SDK stream after the queued frames and waits
// for the connection to report Done.
func (r *runner) closeInput(step int) {
	select {
	case <-r.sendDone:
	default:
		select {
		case r.sendQueue <- nil:
		default:
		}
		select {
		case <-r.sendDone:
		case <-r.done:
		case <-time.After(waitGuard):
		}
	}
	// Unblocks a write the SDK stopped reading (e.g. after a frame-size error).
	_ = r.toSDK.Close()
	select {
	case <-r.done:
	case <-time.After(waitGuard):
		if step >= 0 {
			r.rec.write("note", fmt.Sprintf("step %d: connection not done after EOF", step))
		} else {
			r.rec.write("note", "connection not done after EOF")
		}
	}
}

func (r *runner) startCall(s Step) {
	name := s.As
	if name == "" {
		name = s.Call
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &runningCall{cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	r.calls[name] = c
	r.mu.Unlock()
	go func() {
		defer close(c.done)
		defer cancel()
		res, err := r.dispatch(ctx, s)
		r.rec.write("event", outcome("call", name, res, err))
	}()
}

// outcome describes the result of a call for the transcript.
func outcome(kind, name string, res any, err error) map[string]any {
	ev := map[string]any{kind: name}
	if err != nil {
		var re *acp.RequestError
		if errors.As(err, &re) {
			ev["error"] = map[string]any{"code": re.Code, "message": re.Message, "data": re.Data}
		} else {
			ev["errorText"] = err.Error()
		}
		return ev
	}
	b, mErr := json.Marshal(res)
	if mErr != nil {
		ev["marshalError"] = mErr.Error()
		return ev
	}
	ev["result"] = summarize(b)
	return ev
}

// summarize keeps small JSON inline (as a string, bytes exact) and reduces
// large values to their size and hash.
func summarize(b []byte) string {
	if len(b) <= maxInlineParams {
		return string(b)
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("<%d bytes sha256:%s>", len(b), hex.EncodeToString(sum[:]))
}

// bigFrame builds a session/update notification of about n bytes.
func bigFrame(n int) []byte {
	head := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`
	tail := `"}}}}` + "\n"
	pad := n - len(head) - len(tail)
	if pad < 0 {
		pad = 0
	}
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// nextBehaviour returns the scripted behaviour for this invocation of method.
func (r *runner) nextBehaviour(method string) (*Behaviour, error) {
	list, err := r.sc.behaviours(method)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	r.mu.Lock()
	i := r.invocation[method]
	r.invocation[method] = i + 1
	r.mu.Unlock()
	if i >= len(list) {
		i = len(list) - 1
	}
	return &list[i], nil
}

// invoke records an inbound call and plays its scripted behaviour.
func invoke[Resp any](r *runner, ctx context.Context, method string, params any) (Resp, error) {
	var zero Resp
	ev := map[string]any{"handle": method}
	if raw, ok := params.(json.RawMessage); ok {
		ev["raw"] = summarize(raw)
	} else if b, err := json.Marshal(params); err != nil {
		ev["marshalError"] = err.Error()
	} else {
		ev["params"] = summarize(b)
	}
	r.rec.write("event", ev)

	b, err := r.nextBehaviour(method)
	if err != nil {
		return zero, fmt.Errorf("harness: %w", err)
	}
	if b == nil {
		if _, ext := params.(json.RawMessage); ext {
			return zero, acp.NewMethodNotFound(method)
		}
		return zero, nil
	}
	if b.DelayMs > 0 {
		time.Sleep(time.Duration(b.DelayMs) * time.Millisecond)
	}
	for _, a := range b.Actions {
		res, err := r.dispatch(ctx, a)
		r.rec.write("event", outcome("action", a.Call, res, err))
	}
	switch {
	case b.Panic != "":
		panic(b.Panic)
	case b.Block:
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-time.After(blockGuard):
			return zero, errors.New("harness: block guard expired")
		}
	case b.Error != nil:
		var re acp.RequestError
		if err := json.Unmarshal(b.Error, &re); err != nil {
			return zero, fmt.Errorf("harness: bad scripted error: %w", err)
		}
		if b.Wrapped {
			return zero, fmt.Errorf("wrapped by handler: %w", &re)
		}
		return zero, &re
	case b.ErrorText != "":
		return zero, errors.New(b.ErrorText)
	case b.Result != nil:
		var res Resp
		if err := decodeExact(b.Result, &res); err != nil {
			return zero, fmt.Errorf("harness: bad scripted result: %w", err)
		}
		return res, nil
	}
	return zero, nil
}

// decodeExact decodes JSON keeping numbers in `any` fields exact.
func decodeExact(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// req adapts a typed request method to a caller.
func req[Req, Resp any](fn func(context.Context, Req) (Resp, error)) caller {
	return func(ctx context.Context, s Step) (any, error) {
		var p Req
		if err := decodeExact(s.Params, &p); err != nil {
			return nil, fmt.Errorf("harness: params: %w", err)
		}
		return fn(ctx, p)
	}
}

// notif adapts a typed notification method to a caller.
func notif[Req any](fn func(context.Context, Req) error) caller {
	return func(ctx context.Context, s Step) (any, error) {
		var p Req
		if err := decodeExact(s.Params, &p); err != nil {
			return nil, fmt.Errorf("harness: params: %w", err)
		}
		return nil, fn(ctx, p)
	}
}

// extParams turns a step's params into the value passed to CallExtension.
func extParams(s Step) any {
	if len(s.Params) == 0 {
		return nil
	}
	return s.Params
}

func byName(table map[string]caller, ext func(context.Context, string, any) (json.RawMessage, error), notify func(context.Context, string, any) error) caller {
	return func(ctx context.Context, s Step) (any, error) {
		switch s.Call {
		case "$ext":
			return ext(ctx, s.Method, extParams(s))
		case "$notifyExt":
			return nil, notify(ctx, s.Method, extParams(s))
		}
		c, ok := table[s.Call]
		if !ok {
			return nil, fmt.Errorf("harness: no outbound method %q on this side", s.Call)
		}
		return c(ctx, s)
	}
}

func init() {
	// The SDK logs through slog.Default; logs differ between builds and are
	// not part of the wire, so they are dropped (the -v flag keeps them).
	if os.Getenv("WIRE_LOG") == "" {
		silenceLogs()
	}
}
