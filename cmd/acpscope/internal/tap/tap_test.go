package tap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// chunkReader yields data in pieces whose sizes cycle through sizes (a
// zero size is taken as one byte), as pipes deliver bursts and fragments.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = int(r.sizes[r.i%len(r.sizes)])*97 + 1
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// fakeAgent is an in-memory agent: it takes what it is sent, writes out
// while it runs, and ends its output once its input ended.
type fakeAgent struct {
	mu       sync.Mutex
	received bytes.Buffer
	stdoutW  *io.PipeWriter
	exited   chan struct{}
	stopOnce sync.Once
	signals  []syscall.Signal
	inClosed chan struct{}
	inOnce   sync.Once
}

func (a *fakeAgent) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.received.Write(p)
}

func (a *fakeAgent) Close() error {
	a.inOnce.Do(func() { close(a.inClosed) })
	return nil
}

func (a *fakeAgent) stop() {
	a.stopOnce.Do(func() {
		a.stdoutW.CloseWithError(io.EOF)
		close(a.exited)
	})
}

func (a *fakeAgent) signal(s syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.signals = append(a.signals, s)
}

// newFakeAgent returns an agent that writes out (through a reader of the
// given chunk sizes) and ends once its input is closed and out is sent.
func newFakeAgent(out []byte, sizes []byte) (*fakeAgent, Agent) {
	r, w := io.Pipe()
	a := &fakeAgent{stdoutW: w, exited: make(chan struct{}), inClosed: make(chan struct{})}
	go func() {
		_, _ = io.Copy(w, &chunkReader{data: out, sizes: sizes})
		<-a.inClosed
		a.stop()
	}()
	return a, Agent{Stdin: a, Stdout: r, Exited: a.exited, Signal: a.signal, Stop: a.stop}
}

// passThrough runs a tap between an editor sending in and an agent sending
// out, and returns what each side received.
func passThrough(t testing.TB, in, out, sizes []byte, cfg Config) (toAgent, toEditor []byte, st Stats) {
	t.Helper()
	a, agent := newFakeAgent(out, sizes)
	var editor bytes.Buffer
	cfg.EditorIn = &chunkReader{data: in, sizes: sizes}
	cfg.EditorOut = &editor
	st, err := Run(context.Background(), cfg, agent, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.received.Bytes(), editor.Bytes(), st
}

func newTestObserver(t testing.TB, w io.Writer) *Observer {
	t.Helper()
	obs, err := NewObserver(ObserverConfig{View: view.NewTerminal(w, false)})
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// Every byte arrives unchanged both ways, whatever the framing: malformed
// lines, CRLF, a frame over the observer's limit, a final line without a
// newline, blank lines.
func TestPassThroughIsByteIdentical(t *testing.T) {
	huge := `{"jsonrpc":"2.0","method":"session/update","params":{"text":"` + strings.Repeat("x", 3000) + `"}}`
	in := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\r\n" +
		"not json at all\n\n" + huge + "\n{\"id\":2,\"method\":\"session/new\"")
	out := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1}}\n\x00\xff garbage\r\n" + huge + "\n{}")
	toAgent, toEditor, st := passThrough(t, in, out, []byte{0, 3, 7, 1, 40},
		Config{Observer: newTestObserver(t, io.Discard), MaxLineBytes: 1024})
	if !bytes.Equal(toAgent, in) {
		t.Errorf("the agent received other bytes:\n got %q\nwant %q", toAgent, in)
	}
	if !bytes.Equal(toEditor, out) {
		t.Errorf("the editor received other bytes:\n got %q\nwant %q", toEditor, out)
	}
	if st.TooLong != 2 {
		t.Errorf("TooLong = %d, want 2 (one huge frame each way)", st.TooLong)
	}
	if st.FromEditor != int64(len(in)) || st.FromAgent != int64(len(out)) {
		t.Errorf("counted %d/%d bytes, want %d/%d", st.FromEditor, st.FromAgent, len(in), len(out))
	}
	if st.Unparsed < 2 {
		t.Errorf("Unparsed = %d, want the malformed lines counted", st.Unparsed)
	}
}

// A stopped observer never blocks the pumps: with a queue of one line, a burst is forwarded whole and what did
// not fit is counted.
func TestFullQueueDropsAndNeverBlocks(t *testing.T) {
	q := NewQueue(1, 0)
	p := &Pump{From: capture.FromAgent, Queue: q}
	var burst bytes.Buffer
	for range 1000 {
		burst.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{}}` + "\n")
	}
	var got bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- p.Copy(&got, bytes.NewReader(burst.Bytes())) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pump blocked on a queue nobody reads")
	}
	if !bytes.Equal(got.Bytes(), burst.Bytes()) {
		t.Error("the burst was not forwarded unchanged")
	}
	if q.Dropped.Load() != 999 || p.Lines.Load() != 1000 {
		t.Errorf("dropped %d of %d lines, want 999 of 1000", q.Dropped.Load(), p.Lines.Load())
	}
}

// The queue's byte bound holds however many lines fit in its count.
func TestQueueByteBound(t *testing.T) {
	q := NewQueue(100, 10)
	for range 2 {
		if !q.Offer(capture.FromClient, []byte("12345")) {
			t.Fatal("a line within the bound was refused")
		}
	}
	if q.Offer(capture.FromClient, []byte("1")) {
		t.Fatal("a line past the byte bound was queued")
	}
	l, _ := q.Next()
	q.Done(l)
	if !q.Offer(capture.FromClient, []byte("1")) {
		t.Fatal("freed bytes were not reused")
	}
	q.Close()
	q.Close()
	if q.Offer(capture.FromClient, []byte("1")) {
		t.Fatal("a closed queue took a line")
	}
	for _, want := range []string{"12345", "1"} {
		if l, ok := q.Next(); !ok || string(l.Bytes) != want {
			t.Fatalf("after Close: got %q, %v; want the queued %q", l.Bytes, ok, want)
		}
	}
	if _, ok := q.Next(); ok {
		t.Fatal("a closed, empty queue yielded a line")
	}
}

// The editor closing its side closes the agent's input; an agent that
// does not exit is stopped after the grace, and its output still reaches
// the editor to its end.
func TestEditorCloseEndsTheAgent(t *testing.T) {
	r, w := io.Pipe()
	stopped := make(chan struct{})
	var once sync.Once
	agent := Agent{
		Stdin: nopWriteCloser{io.Discard}, Stdout: r, Exited: stopped,
		Signal: func(syscall.Signal) {},
		Stop: func() {
			once.Do(func() {
				_, _ = w.Write([]byte("last words\n"))
				w.Close()
				close(stopped)
			})
		},
	}
	var editor bytes.Buffer
	start := time.Now()
	st, err := Run(context.Background(), Config{
		EditorIn: strings.NewReader("{}\n"), EditorOut: &editor, Grace: 50 * time.Millisecond,
	}, agent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !st.EditorClosed || st.AgentExited {
		t.Errorf("stats %+v: want the editor to have closed first", st)
	}
	if editor.String() != "last words\n" {
		t.Errorf("editor got %q", editor.String())
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Error("the agent was stopped before its grace")
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Signals are forwarded; SIGTERM also ends the agent after the grace.
func TestSignalsAreForwarded(t *testing.T) {
	editorR, editorW := io.Pipe()
	defer editorW.Close()
	a, agent := newFakeAgent(nil, nil)
	sigs := make(chan os.Signal, 2)
	sigs <- syscall.SIGINT
	sigs <- syscall.SIGTERM
	st, err := Run(context.Background(), Config{
		EditorIn: editorR, EditorOut: io.Discard, Signals: sigs, Grace: 10 * time.Millisecond,
	}, agent, func() bool { return editorR.CloseWithError(io.ErrClosedPipe) == nil })
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.signals) != 2 || a.signals[0] != syscall.SIGINT || a.signals[1] != syscall.SIGTERM {
		t.Errorf("forwarded %v, want [interrupt terminated]", a.signals)
	}
	if !st.AgentExited {
		t.Errorf("stats %+v: the agent should have ended first", st)
	}
}

// partWriter takes its first n bytes, then fails as a pipe whose reader
// is gone.
type partWriter struct{ n int }

func (w *partWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	n := w.n
	w.n = 0
	return n, syscall.EPIPE
}

// An editor that stops reading: the agent's output is closed under it, so
// that its writes fail as they would without the tap; the bytes the
// editor did not take are not counted as passed; and the tap leaves the
// agent to end by itself (it is not stopped while it runs), then ends
// with no error of its own. (Before, Run failed with ErrOutputClosed and
// stopped the agent, whose output stayed open.)
func TestEditorGoneClosesTheAgentsOutput(t *testing.T) {
	editorR, editorW := io.Pipe()
	defer editorW.Close()
	agentOutR, agentOutW := io.Pipe()
	exited := make(chan struct{})
	writeErr := make(chan error, 1)
	go func() { // the agent writes until a write fails, and then exits
		defer close(exited)
		for {
			if _, err := io.WriteString(agentOutW, `{"jsonrpc":"2.0","method":"session/update","params":{}}`+"\n"); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	agent := Agent{
		Stdin: nopWriteCloser{io.Discard}, Stdout: agentOutR, Exited: exited, Signal: func(syscall.Signal) {},
		Stop: func() {
			select {
			case <-exited:
			default:
				t.Error("the tap stopped the agent instead of letting its failed write end it")
			}
		},
	}
	st, err := Run(context.Background(), Config{EditorIn: editorR, EditorOut: &partWriter{n: 10}, Observer: newTestObserver(t, io.Discard)},
		agent, func() bool { return editorR.CloseWithError(io.ErrClosedPipe) == nil })
	if err != nil {
		t.Fatalf("Run: %v, want no error of the tap's own", err)
	}
	select {
	case err := <-writeErr:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("the agent's write failed with %v, want its output closed", err)
		}
	default:
		t.Fatal("the agent's writes did not fail")
	}
	if !st.OutputClosed || st.FromAgent != 10 {
		t.Errorf("stats %+v: want the output closed and the 10 bytes the editor took counted", st)
	}
}

// A burst (a long session's history on session/load) that arrives while
// the observer is busy waits in the queue, in order: none of it is lost.
func TestBurstWaitsForABusyObserver(t *testing.T) {
	q := NewQueue(0, 0)
	p := &Pump{From: capture.FromAgent, Queue: q}
	var burst bytes.Buffer
	const n = 50000
	for i := range n {
		fmt.Fprintf(&burst, `{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`+"\n", i)
	}
	if err := p.Copy(io.Discard, bytes.NewReader(burst.Bytes())); err != nil {
		t.Fatal(err)
	}
	q.Close()
	i := 0
	for l, ok := q.Next(); ok; l, ok = q.Next() {
		if want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`, i); string(l.Bytes) != want {
			t.Fatalf("line %d is %q, want %q", i, l.Bytes, want)
		}
		q.Done(l)
		i++
	}
	if i != n || q.Dropped.Load() != 0 {
		t.Fatalf("observed %d of %d lines, %d dropped", i, n, q.Dropped.Load())
	}
}

// notifyWriter passes writes on to w and closes wrote after the first.
type notifyWriter struct {
	w     io.Writer
	wrote chan struct{}
	once  sync.Once
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	defer n.once.Do(func() { close(n.wrote) })
	return n.w.Write(p)
}

func (n *notifyWriter) Close() error { return nil }

// A stop signal does not wait for an agent slow to exit, nor for the
// grace: the agent's stop starts at once, the observation ends with every
// line sent before the signal observed, Observed gets it while the agent
// still runs, and Run returns once the agent is gone.
func TestStopSignalObservesBeforeTheAgentIsGone(t *testing.T) {
	editorR, editorW := io.Pipe()
	agentOutR, agentOutW := io.Pipe()
	toAgent := &notifyWriter{w: io.Discard, wrote: make(chan struct{})}
	toEditor := &notifyWriter{w: io.Discard, wrote: make(chan struct{})}
	observed, stopping, exited := make(chan Stats, 1), make(chan struct{}), make(chan struct{})
	var stopOnce sync.Once
	agent := Agent{
		Stdin: toAgent, Stdout: agentOutR, Exited: exited, Signal: func(syscall.Signal) {},
		Stop: func() { // gone only once the observation was handed over
			stopOnce.Do(func() {
				close(stopping)
				<-observed
				agentOutW.Close()
				close(exited)
			})
			<-exited
		},
	}
	sigs := make(chan os.Signal, 1)
	go func() { // the editor, the agent, then the editor's SIGTERM
		_, _ = io.WriteString(editorW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
		_, _ = io.WriteString(agentOutW, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`+"\n")
		<-toAgent.wrote // each line is offered to the observer before it is forwarded
		<-toEditor.wrote
		sigs <- syscall.SIGTERM
	}()
	var seen Stats
	st, err := Run(context.Background(), Config{
		EditorIn: editorR, EditorOut: toEditor, Observer: newTestObserver(t, io.Discard), Signals: sigs, Grace: time.Hour,
		Observed: func(st Stats, err error) {
			select {
			case <-stopping:
			default:
				t.Error("the agent's stop had not begun when the observation ended")
			}
			seen = st
			observed <- st
		},
	}, agent, func() bool { return editorR.CloseWithError(io.ErrClosedPipe) == nil })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	default:
		t.Fatal("Run returned before the agent was gone")
	}
	if st != seen {
		t.Errorf("Run returned %+v, Observed got %+v", st, seen)
	}
	if st.Signal != syscall.SIGTERM || st.Lines != 2 || st.Dropped+st.TooLong+st.Unparsed+st.Unobserved != 0 {
		t.Errorf("stats %+v: want SIGTERM's end with both lines observed", st)
	}
}
