// Package replay plays the agent side of a recorded capture against a live
// ACP client, over the same newline-delimited JSON-RPC stream a real agent
// process would use. It lets acpscope, the tests and the conformance suite
// drive the whole client stack (SDK connection, adapters, sinks) from a
// recording, with no agent program.
//
// # How the script is followed
//
// The capture's client entries are sync points; its agent entries are what
// the scripted agent sends:
//
//   - When the live client sends a request, the agent looks forward in the
//     capture for the next recorded client request with the same method.
//     Found: it moves there and sends the agent entries that follow, in order,
//     until the recorded response to that request, which it sends with the
//     live request's id (ids are remapped; everything else is sent as
//     recorded). It stops early at the next recorded client request.
//   - Not found: it answers with a minimal valid result (see Fallback); a
//     session/prompt first plays every agent entry left in the capture, so a
//     capture holding only agent notifications replays as one turn.
//   - A recorded agent request is sent as recorded and the agent waits for
//     the live client's response to it before it goes on, as a real agent
//     waiting for a permission or a cursor/task answer would. A client
//     request that arrives meanwhile and that the capture records later
//     (session/prompt after a permission the agent asked right after
//     session/new, as Auggie does) is held and followed once the wait is
//     over, so the replay does not depend on which of the two arrives
//     first; any other request is answered at once with its fallback.
//   - Client notifications (session/cancel) and responses the script does not
//     wait for are read and ignored.
//   - When the client closes its side, the agent notifications recorded
//     after the last answer are sent (a real agent's output goes on until
//     it exits), then Serve returns; the caller then ends the agent's
//     output.
//
// Serve returns once the client closed its side of the stream and the tail
// is sent, or when ctx ends.
package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Agent is a scripted agent built from a capture. Use one Agent per Serve.
type Agent struct {
	entries []capture.Entry
	pos     int
	// live maps a recorded client request id (canonical form) to the live
	// id that request was given, until its response is sent.
	live map[string]json.RawMessage

	// held are client requests read while the script waited for a
	// response, to be followed after it (at most maxHeld).
	held [][]byte
	read func() ([]byte, error)

	w   io.Writer
	wmu sync.Mutex

	// updateTimes are the recorded times of the session/update
	// notifications sent so far, in the order sent (see UpdateTime).
	tmu         sync.Mutex
	updateTimes []int64
	lastTime    int64
}

// maxHeld bounds the client requests held while the script waits; beyond
// it a request gets its fallback answer at once.
const maxHeld = 256

// NewAgent returns a scripted agent that follows c.
func NewAgent(c *capture.Capture) *Agent {
	return &Agent{entries: c.Entries, live: map[string]json.RawMessage{}}
}

// Serve plays the script: it reads the live client's messages from r and
// writes the agent's messages to w.
func (a *Agent) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	a.w = w
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // releases the reader goroutine whatever ends Serve
	incoming := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := capture.ReadLine(br)
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				select {
				case incoming <- trimmed:
				case <-ctx.Done():
					readErr <- ctx.Err()
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				readErr <- err
				return
			}
		}
	}()
	a.read = func() ([]byte, error) {
		select {
		case line := <-incoming:
			return line, nil
		case err := <-readErr:
			if err == nil {
				err = io.EOF
			}
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		line, err := a.next()
		if errors.Is(err, io.EOF) {
			// The client ended its input, as a client does after its last
			// turn: what the agent recorded after that still goes out
			// before the agent's output ends, as a real agent's would.
			return a.playTail()
		}
		if err != nil {
			return err
		}
		m, err := capture.ParseMessage(line)
		if err != nil || !m.IsRequest() {
			continue // notifications, stray responses, garbage: ignored
		}
		if err := a.answer(m); err != nil {
			if errors.Is(err, io.EOF) {
				// The client closed while the script waited on it (a
				// request the agent sent after the last answer): what the
				// agent recorded after that still goes out.
				return a.playTail()
			}
			return err
		}
	}
}

// next returns the next client message: a held request first, else the
// next line read.
func (a *Agent) next() ([]byte, error) {
	if len(a.held) > 0 {
		line := a.held[0]
		a.held = a.held[1:]
		return line, nil
	}
	return a.read()
}

// answer plays the script for one live client request.
func (a *Agent) answer(req capture.Message) error {
	k := a.findClientRequest(req.Method)
	if k < 0 {
		if req.Method == "session/prompt" {
			if err := a.play(len(a.entries)); err != nil {
				return err
			}
		}
		return a.send(buildResponse(req.ID, Fallback(req.Method, a.sessionHint()), nil))
	}
	rec, _ := capture.ParseMessage(a.entries[k].Msg)
	a.live[capture.IDKey(rec.ID)] = req.ID
	a.pos = k + 1
	if err := a.play(-1); err != nil {
		return err
	}
	if id, ok := a.live[capture.IDKey(rec.ID)]; ok {
		// The capture ended (or moved on) without a response: answer so the
		// client is never left waiting.
		delete(a.live, capture.IDKey(rec.ID))
		return a.send(buildResponse(id, Fallback(req.Method, a.sessionHint()), nil))
	}
	return nil
}

// findClientRequest returns the index of the next recorded client request
// with the given method at or after pos, or -1.
func (a *Agent) findClientRequest(method string) int {
	for i := a.pos; i < len(a.entries); i++ {
		e := a.entries[i]
		if e.From != capture.FromClient {
			continue
		}
		if m, err := capture.ParseMessage(e.Msg); err == nil && m.IsRequest() && m.Method == method {
			return i
		}
	}
	return -1
}

// play sends agent entries from pos on. With limit < 0 it stops at the next
// recorded client request; otherwise it plays up to index limit.
func (a *Agent) play(limit int) error {
	for a.pos < len(a.entries) && (limit < 0 || a.pos < limit) {
		e := a.entries[a.pos]
		m, err := capture.ParseMessage(e.Msg)
		if err != nil {
			a.pos++
			continue
		}
		if e.From == capture.FromClient {
			if m.IsRequest() {
				if limit < 0 {
					return nil
				}
			}
			a.pos++
			continue
		}
		a.pos++
		switch {
		case m.IsResponse():
			if id, ok := a.live[capture.IDKey(m.ID)]; ok {
				delete(a.live, capture.IDKey(m.ID))
				if err := a.send(buildResponse(id, m.Result, m.Error)); err != nil {
					return err
				}
			}
		case m.IsRequest():
			if err := a.send(e.Msg); err != nil {
				return err
			}
			if err := a.awaitResponse(m.ID); err != nil {
				return err
			}
		default:
			if err := a.notify(e, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// notify sends a recorded agent notification, noting the recorded time of
// a session/update first (an entry without one takes the time before it).
func (a *Agent) notify(e capture.Entry, m capture.Message) error {
	if m.Method == "session/update" {
		a.tmu.Lock()
		if e.T != nil {
			a.lastTime = *e.T
		}
		a.updateTimes = append(a.updateTimes, a.lastTime)
		a.tmu.Unlock()
	}
	return a.send(e.Msg)
}

// UpdateTime returns the recorded time, in milliseconds since the capture
// started, of the k-th (0-based) session/update notification the agent
// has sent; ok is false before it was sent. A client that handles updates
// in the order received uses it to date what the k-th update shows with
// the capture's own clock.
func (a *Agent) UpdateTime(k int) (ms int64, ok bool) {
	a.tmu.Lock()
	defer a.tmu.Unlock()
	if k < 0 || k >= len(a.updateTimes) {
		return 0, false
	}
	return a.updateTimes[k], true
}

// playTail sends the agent notifications left in the script once the
// client has closed its input. Requests (nobody would answer them) and
// responses (nothing waits for them) are passed over.
func (a *Agent) playTail() error {
	for ; a.pos < len(a.entries); a.pos++ {
		e := a.entries[a.pos]
		if e.From != capture.FromAgent {
			continue
		}
		m, err := capture.ParseMessage(e.Msg)
		if err != nil || m.IsRequest() || m.IsResponse() {
			continue
		}
		if err := a.notify(e, m); err != nil {
			return err
		}
	}
	return nil
}

// awaitResponse reads client messages until the response to the agent's
// request id arrives. A request the client sends meanwhile is held when the
// capture records it later (it is followed after the wait); any other is
// answered with its fallback, so neither side waits on the other.
func (a *Agent) awaitResponse(id json.RawMessage) error {
	want := capture.IDKey(id)
	var held [][]byte
	defer func() { a.held = append(held, a.held...) }()
	for {
		line, err := a.next()
		if err != nil {
			return err
		}
		m, err := capture.ParseMessage(line)
		if err != nil {
			continue
		}
		if m.IsResponse() && capture.IDKey(m.ID) == want {
			return nil
		}
		if m.IsRequest() {
			if len(held)+len(a.held) < maxHeld && a.findClientRequest(m.Method) >= 0 {
				held = append(held, line)
				continue
			}
			if err := a.send(buildResponse(m.ID, Fallback(m.Method, a.sessionHint()), nil)); err != nil {
				return err
			}
		}
	}
}

// sessionHint is the first session id any agent entry names, used by
// fallback session/new answers so replayed updates find their session.
func (a *Agent) sessionHint() string {
	for _, e := range a.entries {
		if e.From != capture.FromAgent {
			continue
		}
		var probe struct {
			Params struct {
				SessionID string `json:"sessionId"`
			} `json:"params"`
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		if json.Unmarshal(e.Msg, &probe) == nil {
			if probe.Result.SessionID != "" {
				return probe.Result.SessionID
			}
			if probe.Params.SessionID != "" {
				return probe.Params.SessionID
			}
		}
	}
	return "replay-session"
}

func (a *Agent) send(msg []byte) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	line := make([]byte, 0, len(msg)+1)
	line = append(append(line, msg...), '\n')
	_, err := a.w.Write(line)
	return err
}

// Fallback is the minimal valid result the scripted agent gives a request
// the capture does not answer: an initialize result for protocol version 1,
// a session id for session/new (sessionID), an end_turn stop for
// session/prompt, and {} for everything else.
func Fallback(method, sessionID string) json.RawMessage {
	switch method {
	case "initialize":
		return json.RawMessage(`{"agentCapabilities":{},"authMethods":[],"protocolVersion":1}`)
	case "session/new":
		b, _ := json.Marshal(map[string]string{"sessionId": sessionID})
		return b
	case "session/prompt":
		return json.RawMessage(`{"stopReason":"end_turn"}`)
	}
	return json.RawMessage(`{}`)
}

// buildResponse assembles a response envelope in the SDK's key order.
func buildResponse(id, result, rpcErr json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	if len(rpcErr) > 0 && !bytes.Equal(rpcErr, []byte("null")) {
		b.WriteString(`,"error":`)
		b.Write(rpcErr)
	} else {
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		b.WriteString(`,"result":`)
		b.Write(result)
	}
	b.WriteByte('}')
	return b.Bytes()
}
