package tap

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// frameStream yields count frames of head + size filler bytes + tail + a
// newline, without ever holding a frame: what an agent or an editor
// sending huge frames puts on a pipe.
type frameStream struct {
	head, tail []byte
	size       int
	count      int

	frame int // frames fully yielded
	pos   int // position inside the current frame
}

var filler = bytes.Repeat([]byte("x"), 1<<20)

func (f *frameStream) Read(p []byte) (int, error) {
	if f.frame >= f.count {
		return 0, io.EOF
	}
	frameLen := len(f.head) + f.size + len(f.tail) + 1
	n := 0
	for n < len(p) && f.pos < frameLen {
		var src []byte
		switch {
		case f.pos < len(f.head):
			src = f.head[f.pos:]
		case f.pos < len(f.head)+f.size:
			src = filler[:min(len(filler), len(f.head)+f.size-f.pos)]
		case f.pos < frameLen-1:
			src = f.tail[f.pos-len(f.head)-f.size:]
		default:
			src = []byte{'\n'}
		}
		c := copy(p[n:], src)
		n += c
		f.pos += c
	}
	if f.pos == frameLen {
		f.frame++
		f.pos = 0
	}
	return n, nil
}

// multiStream reads its streams one after the other, then waits for
// release before it ends (the agent's output ends only once the editor's
// side has been passed).
type multiStream struct {
	r       io.Reader
	release <-chan struct{}
}

func (m *multiStream) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err == io.EOF {
		<-m.release
	}
	return n, err
}

// discardCloser is an agent's input that takes everything.
type discardCloser struct {
	once   sync.Once
	closed chan struct{}
}

func (d *discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardCloser) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

// memoryReport is what the memory child prints.
type memoryReport struct {
	PeakBytes uint64 // the Go runtime's peak of memory taken from the OS and not returned
	Stats     Stats
}

// memoryChildEnv runs TestMemoryBoundHugeFrames as the measured child.
const memoryChildEnv = "ACPSCOPE_TAP_MEMORY_CHILD"

// memorySlack is the constant on top of the documented bound: the 32 MiB
// LimitMemory leaves for the runtime, the cards and the view, and the test
// binary.
const memorySlack = 48 << 20

// The tap's memory stays within its documented bound (MemoryBound: the
// queue's bytes, every line held between the pumps and the observer
// included, plus the observer's work on one line) plus a constant, for a
// stream of 60 MiB frames and a 200 MB line each way, whatever the
// observer keeps up with. Measured in a child process with runtime/metrics
// (the race detector's shadow memory is not the tap's).
func TestMemoryBoundHugeFrames(t *testing.T) {
	if os.Getenv(memoryChildEnv) == "1" {
		memoryChild()
		return
	}
	if testing.Short() {
		t.Skip("streams about 1 GB through the tap")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMemoryBoundHugeFrames$", "-test.count", "1")
	cmd.Env = append(os.Environ(), memoryChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	i := bytes.Index(out, []byte("MEMORY "))
	if i < 0 {
		t.Fatalf("child printed no report:\n%s", out)
	}
	line, _, _ := bytes.Cut(out[i+len("MEMORY "):], []byte("\n"))
	var rep memoryReport
	if err := json.Unmarshal(line, &rep); err != nil {
		t.Fatalf("report %q: %v", line, err)
	}
	bound := MemoryBound(DefaultQueueBytes, DefaultMaxLineBytes) + memorySlack
	t.Logf("peak %d MiB (bound %d MiB); %s", rep.PeakBytes>>20, bound>>20, rep.Stats)
	if rep.PeakBytes > uint64(bound) {
		t.Errorf("peak memory %d MiB, over the bound %d MiB (%d MiB queue, %d MiB lines)",
			rep.PeakBytes>>20, bound>>20, DefaultQueueBytes>>20, DefaultMaxLineBytes>>20)
	}
	if want := int64(4*60<<20+200e6+16) * 2; rep.Stats.FromAgent+rep.Stats.FromEditor < want {
		t.Errorf("passed %d bytes, want at least %d", rep.Stats.FromAgent+rep.Stats.FromEditor, want)
	}
	if rep.Stats.TooLong != 2 {
		t.Errorf("TooLong = %d, want the two 200 MB lines", rep.Stats.TooLong)
	}
}

// memoryChild streams the frames through Run and prints a memoryReport.
func memoryChild() {
	LimitMemory(0, 0)
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	var peak uint64
	sample := func() {
		metrics.Read(samples)
		if used := samples[0].Value.Uint64() - samples[1].Value.Uint64(); used > peak {
			peak = used
		}
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	const frame = 60 << 20
	huge := int(200e6)
	agentOut := io.MultiReader(
		&frameStream{head: []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`), tail: []byte(`"}}}}`), size: frame, count: 4},
		&frameStream{head: []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"text":"`), tail: []byte(`"}}`), size: huge, count: 1},
	)
	editorIn := io.MultiReader(
		&frameStream{head: []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":"`), tail: []byte(`"}}`), size: frame, count: 4},
		&frameStream{head: []byte(`{"jsonrpc":"2.0","id":8,"result":{"content":"`), tail: []byte(`"}}`), size: huge, count: 1},
	)
	stdin := &discardCloser{closed: make(chan struct{})}
	exited := make(chan struct{})
	var exitOnce sync.Once
	stopAgent := func() { exitOnce.Do(func() { close(exited) }) }
	obs, err := NewObserver(ObserverConfig{View: view.NewTerminal(io.Discard, false)})
	if err != nil {
		panic(err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}` + "\n"
	initOut := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}` + "\n"
	st, err := Run(context.Background(), Config{
		EditorIn:  io.MultiReader(strings.NewReader(init), editorIn),
		EditorOut: io.Discard,
		Observer:  obs,
	}, Agent{
		Stdin:  stdin,
		Stdout: &multiStream{r: io.MultiReader(strings.NewReader(initOut), agentOut), release: stdin.closed},
		Exited: exited,
		Signal: func(syscall.Signal) {},
		Stop:   stopAgent,
	}, nil)
	if err != nil {
		panic(err)
	}
	close(stop)
	<-sampled
	b, _ := json.Marshal(memoryReport{PeakBytes: peak, Stats: st})
	os.Stdout.WriteString("MEMORY " + string(b) + "\n")
}
