package tap

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is an agent input that keeps what it got.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) Close() error { return nil }

// The editor's lines arrive in pieces that split them anywhere while the
// tap injects its own lines from other goroutines: every line the agent
// reads is whole, one of the editor's or one of the tap's, the editor's in
// their order, and every injected line arrives.
func TestAgentInputNeverSplitsALine(t *testing.T) {
	out := &lockedBuffer{}
	in := NewAgentInput(out)
	var editor bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&editor, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"text":"%s"}}`+"\n", i, strings.Repeat("x", i%37))
	}
	stream := editor.Bytes()
	const injections = 50
	var wg sync.WaitGroup
	for i := range injections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.Inject([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"c%d"}}`+"\n", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	for len(stream) > 0 {
		n := min(len(stream), 1+len(stream)%13) // pieces of 1 to 13 bytes
		if w, err := in.Write(stream[:n]); err != nil || w != n {
			t.Fatalf("write: %d, %v", w, err)
		}
		stream = stream[n:]
	}
	wg.Wait()
	var editorLines, tapLines []string
	for _, line := range strings.SplitAfter(out.b.String(), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`) && strings.HasSuffix(line, "}}\n"):
			editorLines = append(editorLines, line)
		case strings.HasPrefix(line, `{"jsonrpc":"2.0","method":"session/cancel"`) && strings.HasSuffix(line, "}}\n"):
			tapLines = append(tapLines, line)
		default:
			t.Fatalf("a line was split: %q", line)
		}
	}
	if strings.Join(editorLines, "") != editor.String() || len(tapLines) != injections {
		t.Fatalf("%d editor lines (in order: %v), %d tap lines", len(editorLines), strings.Join(editorLines, "") == editor.String(), len(tapLines))
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.Inject([]byte("{}\n")); err != ErrInputClosed {
		t.Errorf("inject after close: %v", err)
	}
}

// A line injected while the editor's line is unfinished waits for its
// newline, and goes right after it.
func TestAgentInputWaitsForTheLineEnd(t *testing.T) {
	out := &lockedBuffer{}
	in := NewAgentInput(out)
	_, _ = in.Write([]byte(`{"a":`))
	_ = in.Inject([]byte("T\n"))
	if got := out.b.String(); got != `{"a":` {
		t.Fatalf("injected inside a line: %q", got)
	}
	_, _ = in.Write([]byte("1}\n{\"b\""))
	if got := out.b.String(); got != "{\"a\":1}\nT\n{\"b\"" {
		t.Fatalf("got %q", got)
	}
}

// BenchmarkAgentInput is the pass-through's write of 32 KiB pieces of
// editor lines through AgentInput (tap --allow-stop), against the bare
// pipe (direct): what sharing the agent's input costs per write.
func BenchmarkAgentInput(b *testing.B) {
	var lines bytes.Buffer
	for lines.Len() < 32<<10 {
		lines.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}` + "\n")
	}
	piece := lines.Bytes()[:32<<10]
	for _, c := range []struct {
		name string
		w    io.Writer
	}{{"direct", &discardCloser{closed: make(chan struct{})}}, {"shared", NewAgentInput(&discardCloser{closed: make(chan struct{})})}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(piece)))
			for b.Loop() {
				_, _ = c.w.Write(piece)
			}
		})
	}
}
