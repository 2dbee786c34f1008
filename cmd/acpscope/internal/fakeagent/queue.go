package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// The turns mode with -hold N is an agent that queues prompts, as Claude's
// promptQueueing does: it answers no prompt until N have arrived, then
// works them one at a time in the order they arrived on the wire. A
// client that waits for each answer before it sends the next prompt
// never gets one (its --timeout ends the turn); one that queues its
// prompts gets every turn, in order.

// wireQueue is the order in which prompts arrived, read off the agent's
// input, and how many of them have been worked.
type wireQueue struct {
	hold    int
	mu      sync.Mutex
	changed *sync.Cond
	arrived []string // prompt texts, in wire order
	worked  int
	// answering: the prompt being worked returned, its answer not yet
	// written.
	answering bool
}

// newWireQueue returns the queue of prompts read from in, and the reader
// the connection reads instead (in, unchanged).
func newWireQueue(in io.Reader, hold int) (*wireQueue, io.Reader) {
	q := &wireQueue{hold: hold}
	q.changed = sync.NewCond(&q.mu)
	r, w := io.Pipe()
	go func() {
		s := bufio.NewScanner(r)
		s.Buffer(make([]byte, 64<<10), 64<<20)
		for s.Scan() {
			var m struct {
				Method string
				Params struct{ Prompt []struct{ Text string } }
			}
			if json.Unmarshal(s.Bytes(), &m) != nil || m.Method != "session/prompt" {
				continue
			}
			q.mu.Lock()
			q.arrived = append(q.arrived, promptText(m.Params.Prompt))
			q.changed.Broadcast()
			q.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return q, io.TeeReader(in, w)
}

// promptText joins a prompt's text blocks as promptTurn does.
func promptText(blocks []struct{ Text string }) string {
	var b strings.Builder
	for _, x := range blocks {
		b.WriteString(x.Text)
	}
	return b.String()
}

// take waits until the prompt text is the next to work (it arrived, every
// prompt before it was worked, and hold prompts have arrived); the
// returned func marks it answering: it counts as worked once its answer
// is on the wire (output), so the next prompt's answer never overtakes
// it (the SDK writes an answer after the handler returned).
func (q *wireQueue) take(text string) (done func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.arrived) < q.hold || q.worked >= len(q.arrived) || q.arrived[q.worked] != text || q.answering {
		q.changed.Wait()
	}
	return func() {
		q.mu.Lock()
		q.answering = true
		q.mu.Unlock()
	}
}

// output wraps the agent's output: the prompt answer written while a
// prompt is answering marks it worked. Prompts are worked one at a time,
// so the next answer written is that prompt's.
func (q *wireQueue) output(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n, err := w.Write(p)
		if bytes.Contains(p, []byte(`"stopReason"`)) {
			q.mu.Lock()
			if q.answering {
				q.answering = false
				q.worked++
				q.changed.Broadcast()
			}
			q.mu.Unlock()
		}
		return n, err
	})
}

// writerFunc is an io.Writer from a func.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
