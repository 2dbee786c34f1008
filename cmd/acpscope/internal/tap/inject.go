package tap

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// AgentInput is the agent's standard input shared by the pass-through
// (the editor's bytes, written in whatever pieces they were read) and the
// tap's own messages (Inject): a message of the tap is written only
// between two of the editor's lines, never inside one. It is the one
// writer of the agent's input.
type AgentInput struct {
	mu sync.Mutex
	w  io.WriteCloser
	// midLine: the last byte written was not a newline (the editor's line
	// is not finished).
	midLine bool
	// queued are the tap's lines waiting for the editor's line to end.
	queued [][]byte
	closed bool
}

// NewAgentInput returns the shared writer of w.
func NewAgentInput(w io.WriteCloser) *AgentInput { return &AgentInput{w: w} }

// ErrInputClosed is Inject's error once the agent's input is closed.
var ErrInputClosed = errors.New("the agent's input is closed")

// Write writes the editor's bytes; a tap line queued while the editor's
// line was unfinished goes right after that line's newline. It reports
// only the editor's bytes written.
func (a *AgentInput) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for len(p) > 0 {
		chunk := p
		if len(a.queued) > 0 {
			if i := bytes.IndexByte(p, '\n'); i >= 0 {
				chunk = p[:i+1]
			}
		}
		m, err := a.w.Write(chunk)
		n += m
		if m > 0 {
			a.midLine = chunk[m-1] != '\n'
		}
		if err != nil {
			return n, err
		}
		p = p[len(chunk):]
		if !a.midLine {
			if err := a.flushQueued(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Inject writes line (one JSON-RPC message, ending in a newline) into
// the agent's input: at once between the editor's lines, else right
// after the editor's current line ends.
func (a *AgentInput) Inject(line []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrInputClosed
	}
	a.queued = append(a.queued, bytes.Clone(line))
	if a.midLine {
		return nil
	}
	return a.flushQueued()
}

// flushQueued writes the queued tap lines (a.mu held, at a line
// boundary).
func (a *AgentInput) flushQueued() error {
	for len(a.queued) > 0 {
		line := a.queued[0]
		a.queued = a.queued[1:]
		if _, err := a.w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the agent's input; a line still queued is dropped (the
// agent reads nothing more).
func (a *AgentInput) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed, a.queued = true, nil
	return a.w.Close()
}
