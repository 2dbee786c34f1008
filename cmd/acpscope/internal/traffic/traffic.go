// Package traffic keeps the recent JSON-RPC messages of one ACP
// connection, both directions, for acpscope's traffic view: a ring
// bounded by a message count and a byte budget, which drops its oldest
// messages to take new ones and never makes its writer wait for a reader.
//
// A Log is a sink of wire frames: Add takes one message as it passed, and
// keeps a copy of at most MaxFrameBytes of it (a longer one is kept cut,
// with its whole length) with the few routing facts the view filters and
// links by: direction, kind, method (a response gets its request's), id,
// session and tool call id. Nothing else of a message is decoded when it
// is added; the pretty form is made only when a page asks (Pretty).
package traffic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// The defaults bound a Log: at most DefaultMaxFrames messages and
// DefaultMaxBytes of kept text (with frameOverhead per message for its
// facts), each message kept to DefaultMaxFrameBytes.
const (
	DefaultMaxFrames     = 10_000
	DefaultMaxBytes      = 32 << 20
	DefaultMaxFrameBytes = 64 << 10
)

// frameOverhead is what a kept message costs besides its text and its
// facts' strings, counted against the byte budget.
const frameOverhead = 256

// maxPending bounds the requests a Log remembers the method and session
// of until they are answered; past it the oldest is forgotten (its answer
// is shown without a method).
const maxPending = 1024

// maxRoots bounds the sessions a Log remembers as opened by the client.
const maxRoots = 256

// maxFact bounds one routing fact (method, id, session, tool call id)
// kept for a message: a hostile peer's megabyte id is cut.
const maxFact = 1024

// Options bounds a Log; zero fields take the defaults.
type Options struct {
	MaxFrames     int
	MaxBytes      int64
	MaxFrameBytes int
}

// Frame is one kept message.
type Frame struct {
	// Seq numbers the messages the Log took, from 1, in wire order.
	Seq uint64 `json:"seq"`
	// At is when the message passed.
	At time.Time `json:"at"`
	// From is its sender: "client" (the editor, or acpscope run) or
	// "agent".
	From string `json:"from"`
	// Kind is "request", "notification", "response", "error" (a failed
	// response) or "invalid" (not a JSON-RPC message).
	Kind string `json:"kind"`
	// Method is the method called; for a response, its request's method
	// when the Log saw the request.
	Method string `json:"method,omitempty"`
	// ID is the JSON-RPC id as it was written (raw JSON).
	ID string `json:"id,omitempty"`
	// Session is params.sessionId; for a response, its request's; for the
	// answer to session/new, the session it opened.
	Session string `json:"session,omitempty"`
	// Call is the tool call the message is about: params.update.toolCallId
	// (session/update) or params.toolCall.toolCallId (a permission
	// request).
	Call string `json:"call,omitempty"`
	// Update is a session/update's params.update.sessionUpdate.
	Update string `json:"update,omitempty"`
	// Size is the message's length in bytes.
	Size int `json:"size"`
	// Text is the message, cut to the Log's MaxFrameBytes (at a UTF-8
	// boundary) when Truncated; invalid UTF-8 is replaced.
	Text string `json:"-"`
	// Truncated reports that Text is only the start of the message.
	Truncated bool `json:"truncated,omitempty"`
}

// cost is what f counts against the byte budget: its text, its facts and
// frameOverhead.
func (f *Frame) cost() int64 {
	return int64(len(f.Text)+len(f.Method)+len(f.ID)+len(f.Session)+len(f.Call)+len(f.Update)) + frameOverhead
}

// pending is what a Log remembers of a request until its answer.
type pending struct {
	method, session string
	seq             uint64
}

// Log is a bounded ring of recent messages; it is safe for concurrent use.
type Log struct {
	opts Options

	mu      sync.Mutex
	ring    []Frame // capacity MaxFrames; head is the oldest
	head, n int
	bytes   int64
	seq     uint64
	dropped int64
	start   time.Time
	// pending maps a request's direction and canonical id to its method
	// and session.
	pending map[string]pending
	// roots are the sessions the client opened (the answers to
	// session/new, and session/load and session/resume requests), oldest
	// first.
	roots []string
	// methods and sessions count the kept messages of each method and
	// session: the filters' choices.
	methods, sessions map[string]int
}

// New returns an empty Log bounded by opts.
func New(opts Options) *Log {
	if opts.MaxFrames <= 0 {
		opts.MaxFrames = DefaultMaxFrames
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	return &Log{opts: opts, ring: make([]Frame, opts.MaxFrames), pending: map[string]pending{},
		methods: map[string]int{}, sessions: map[string]int{}}
}

// Options returns the Log's bounds, defaults applied.
func (l *Log) Options() Options { return l.opts }

// MemoryBound is the most memory the Log holds, whatever it is given:
// the byte budget, the ring's slots, and the requests and sessions it
// remembers (each fact at most maxFact bytes).
func (l *Log) MemoryBound() int64 {
	return l.opts.MaxBytes + int64(l.opts.MaxFrames)*int64(unsafe.Sizeof(Frame{})) +
		(maxPending*2+maxRoots)*maxFact
}

// params is what Add decodes of a message's params: the routing facts.
type params struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string `json:"sessionUpdate"`
		ToolCallID    string `json:"toolCallId"`
	} `json:"update"`
	ToolCall struct {
		ToolCallID string `json:"toolCallId"`
	} `json:"toolCall"`
}

// Add takes one message that from sent, passed at at. msg is one wire
// line without its line end; it is copied (at most MaxFrameBytes of it),
// never kept. A nil Log takes nothing.
func (l *Log) Add(from capture.Direction, msg []byte, at time.Time) {
	if l == nil {
		return
	}
	l.addSized(from, msg, len(msg), at)
}

// AddParsed is Add of a message whose envelope the caller decoded
// already (capture.ParseMessage; the tap's observer does): only its
// params are decoded again, for the routing facts.
func (l *Log) AddParsed(from capture.Direction, msg []byte, m *capture.Message, at time.Time) {
	if l == nil {
		return
	}
	l.add(from, msg, len(msg), m, at)
}

// addSized is Add of the start msg of a message of size bytes.
func (l *Log) addSized(from capture.Direction, msg []byte, size int, at time.Time) {
	var m *capture.Message
	if len(msg) > 0 && msg[0] == '{' {
		if pm, err := capture.ParseMessage(msg); err == nil {
			m = &pm
		}
	}
	l.add(from, msg, size, m, at)
}

// add keeps a message; m is its envelope, nil when it is no JSON-RPC
// message.
func (l *Log) add(from capture.Direction, msg []byte, size int, m *capture.Message, at time.Time) {
	f := Frame{At: at, From: string(from), Size: size, Kind: "invalid"}
	if m != nil {
		f.Kind = kindOf(m)
		f.Method = fact(m.Method)
		f.ID = fact(string(m.ID))
		var p params
		// A type mismatch deep in params leaves what was decoded.
		_ = json.Unmarshal(m.Params, &p)
		f.Session = fact(p.SessionID)
		f.Update = fact(p.Update.SessionUpdate)
		f.Call = fact(p.Update.ToolCallID)
		if f.Call == "" {
			f.Call = fact(p.ToolCall.ToolCallID)
		}
	}
	keep := min(len(msg), l.opts.MaxFrameBytes)
	for back := 0; keep < len(msg) && back < utf8.UTFMax-1 && !utf8.RuneStart(msg[keep]); back++ {
		keep-- // cut at a rune boundary (invalid bytes are replaced anyway)
	}
	f.Text, f.Truncated = strings.ToValidUTF8(string(msg[:keep]), "\ufffd"), keep < size

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.start.IsZero() {
		l.start = at
	}
	if m != nil {
		l.route(from, &f, m)
	}
	l.seq++
	f.Seq = l.seq
	for l.n > 0 && (l.n == len(l.ring) || l.bytes+f.cost() > l.opts.MaxBytes) {
		l.dropOldest()
	}
	l.ring[(l.head+l.n)%len(l.ring)] = f
	l.n++
	l.bytes += f.cost()
	count(l.methods, f.Method, 1)
	count(l.sessions, f.Session, 1)
}

// count adds d to m[k] (a non-empty k), deleting it at zero.
func count(m map[string]int, k string, d int) {
	if k == "" {
		return
	}
	if m[k] += d; m[k] <= 0 {
		delete(m, k)
	}
}

// fact is a routing fact as kept: at most maxFact bytes of valid UTF-8.
func fact(s string) string {
	if len(s) > maxFact {
		s = s[:maxFact]
	}
	return strings.ToValidUTF8(s, "\ufffd")
}

// kindOf names a message's kind.
func kindOf(m *capture.Message) string {
	switch {
	case m.IsRequest():
		return "request"
	case m.IsNotification():
		return "notification"
	case m.IsResponse() && m.Failed():
		return "error"
	case m.IsResponse():
		return "response"
	}
	return "invalid"
}

// route pairs requests with their answers: a request is remembered, a
// response takes its request's method and session; the sessions the
// client opens are noted as roots.
func (l *Log) route(from capture.Direction, f *Frame, env *capture.Message) {
	switch f.Kind {
	case "request":
		if len(l.pending) >= maxPending {
			l.forgetOldestPending()
		}
		l.pending[string(from)+" "+capture.IDKey(env.ID)] = pending{method: f.Method, session: f.Session, seq: l.seq}
		if from == capture.FromClient && f.Session != "" && (f.Method == "session/load" || f.Method == "session/resume") {
			l.addRoot(f.Session)
		}
	case "response", "error":
		other := capture.FromClient
		if from == capture.FromClient {
			other = capture.FromAgent
		}
		key := string(other) + " " + capture.IDKey(env.ID)
		p, ok := l.pending[key]
		if !ok {
			return
		}
		delete(l.pending, key)
		f.Method, f.Session = p.method, p.session
		if p.method == "session/new" && from == capture.FromAgent && f.Kind == "response" {
			var r struct {
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal(env.Result, &r) == nil && r.SessionID != "" {
				f.Session = fact(r.SessionID)
				l.addRoot(f.Session)
			}
		}
	}
}

func (l *Log) forgetOldestPending() {
	oldest, least := "", ^uint64(0)
	for k, p := range l.pending {
		if p.seq < least {
			oldest, least = k, p.seq
		}
	}
	delete(l.pending, oldest)
}

func (l *Log) addRoot(session string) {
	for _, r := range l.roots {
		if r == session {
			return
		}
	}
	if len(l.roots) >= maxRoots {
		l.roots = l.roots[1:]
	}
	l.roots = append(l.roots, session)
}

func (l *Log) dropOldest() {
	f := &l.ring[l.head]
	l.bytes -= f.cost()
	count(l.methods, f.Method, -1)
	count(l.sessions, f.Session, -1)
	*f = Frame{}
	l.head = (l.head + 1) % len(l.ring)
	l.n--
	l.dropped++
}

// Filter selects messages: every non-empty field must match exactly.
type Filter struct {
	Method  string
	Session string
}

func (q Filter) match(f *Frame) bool {
	return (q.Method == "" || f.Method == q.Method) && (q.Session == "" || f.Session == q.Session)
}

// Page is what Since returns.
type Page struct {
	// Frames are the matching kept messages after the asked sequence
	// number, oldest first.
	Frames []Frame
	// Last is the sequence number of the newest message taken (the next
	// Since's after).
	Last uint64
	// More reports that more matching messages follow the ones returned.
	More bool
	// Kept, Bytes and Dropped are the Log's messages held, the bytes they
	// count against the budget, and the messages dropped to make room.
	Kept    int
	Bytes   int64
	Dropped int64
	// Start is when the first message passed.
	Start time.Time
	// Methods and Sessions are the distinct methods and sessions among
	// the kept messages (the filters' choices), sorted.
	Methods, Sessions []string
}

// Since returns up to limit kept messages matching q whose sequence
// number is after after, oldest first.
func (l *Log) Since(after uint64, q Filter, limit int) Page {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := Page{Last: l.seq, Kept: l.n, Bytes: l.bytes, Dropped: l.dropped, Start: l.start,
		Methods: slices.Sorted(maps.Keys(l.methods)), Sessions: slices.Sorted(maps.Keys(l.sessions))}
	if l.n == 0 {
		return p
	}
	// The kept sequence numbers are consecutive: the first one after
	// after is found without a scan.
	first := l.ring[l.head].Seq
	i := 0
	if after >= first {
		i = int(min(after-first+1, uint64(l.n)))
	}
	for ; i < l.n; i++ {
		f := &l.ring[(l.head+i)%len(l.ring)]
		if !q.match(f) {
			continue
		}
		if len(p.Frames) == limit {
			p.More = true
			break
		}
		p.Frames = append(p.Frames, *f)
	}
	return p
}

// TailStart returns the sequence number after which at most n kept
// messages match q: Since from there reads only the latest n (a page
// that shows n messages need not read the older ones).
func (l *Log) TailStart(q Filter, n int) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	found := 0
	for i := l.n - 1; i >= 0; i-- {
		f := &l.ring[(l.head+i)%len(l.ring)]
		if !q.match(f) {
			continue
		}
		if found++; found > n {
			return f.Seq
		}
	}
	return 0
}

// Roots returns the sessions the client opened, newest first.
func (l *Log) Roots() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.roots))
	for i, r := range l.roots {
		out[len(out)-1-i] = r
	}
	return out
}

// Pretty is the text a page shows of f: a whole message indented (two
// spaces), a cut or invalid one as it was; either way with every control
// character, line separator and bidirectional formatting character
// escaped (\uXXXX, which in a JSON string is the same character), so
// that nothing in a message can reorder or hide what the page shows.
func Pretty(f *Frame) string {
	if !f.Truncated {
		var b bytes.Buffer
		if json.Indent(&b, []byte(f.Text), "", "  ") == nil {
			return string(safetext.JSON(b.Bytes()))
		}
	}
	return escapeRaw(f.Text)
}

// escapeRaw escapes every forbidden rune of a message that is not whole
// JSON (a line end included: a frame is one line).
func escapeRaw(s string) string {
	if !strings.ContainsFunc(s, safetext.Forbidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if safetext.Forbidden(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
