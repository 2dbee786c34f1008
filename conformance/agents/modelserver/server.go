// Package modelserver is a scripted model server for the published-agent
// harness of conformance/agents: one HTTP server on 127.0.0.1 that speaks
// each wire format the agents use to reach their model, and answers every
// request from a Script, deterministically.
//
// Each wire format lives in its own file and registers its routes from an
// init function with Register. A route's handler decodes the request into
// the format-neutral Request, asks the server's Script for a Reply and
// encodes that Reply in its own format (usually streamed). The Script never
// sees wire JSON; a format never decides what to answer.
package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Request is one model call, decoded from any wire format.
type Request struct {
	// Format names the wire format that decoded the request (e.g.
	// "anthropic", "openai-chat").
	Format string
	// Path is the HTTP path of the call.
	Path string
	// Model is the model the agent asked for.
	Model string
	// System is the system prompt (all system text joined by newlines).
	System string
	// Messages is the conversation, oldest first, without system messages.
	Messages []Message
	// Tools are the names of the tools offered to the model.
	Tools []string
	// Stream reports whether the agent asked for a streamed answer.
	Stream bool
	// Body is the raw request body, for scripts and debugging that need
	// what the neutral fields leave out (tool schemas, options).
	Body []byte
}

// Message is one turn of a conversation.
type Message struct {
	// Role is "user" or "assistant" (tool results are user turns).
	Role string
	// Text is the message's text, all text parts joined by newlines.
	Text string
	// ToolCalls are the tool calls of an assistant turn.
	ToolCalls []ToolCall
	// ToolResults are the tool results of a user turn.
	ToolResults []ToolResult
}

// ToolCall is a tool call the model made (or is to make).
type ToolCall struct {
	// ID is the tool call id; Script replies should set a stable one.
	ID string
	// Name is the tool's name.
	Name string
	// Input is the tool's arguments, a JSON object.
	Input json.RawMessage
}

// ToolResult is the result of a tool call, as the agent sent it back.
type ToolResult struct {
	// CallID is the id of the tool call this answers.
	CallID string
	// Text is the result's text.
	Text string
	// IsError reports an error result where the format says so.
	IsError bool
}

// Reply is the Script's answer to a Request: some text, tool calls, or
// both (text first).
type Reply struct {
	// Text is the assistant text.
	Text string
	// Thought, when set, is reasoning streamed before Text (formats that
	// implement it: openai-chat, as a reasoning_content delta).
	Thought string
	// ToolCalls are tool calls to make; the stop reason becomes "tool use".
	ToolCalls []ToolCall
	// Hold keeps the call open, unanswered, until the agent gives up on it
	// or the server closes: a model call still running when the turn is
	// cancelled. The server's hold hook (SetOnHold) runs first.
	Hold bool
	// Status, when set, answers the call with that HTTP error status and
	// Text as the error message, instead of a reply (formats that
	// implement it: anthropic).
	Status int
}

// Script answers one model call. It runs on the server's goroutines and
// may be called concurrently (subagents run in parallel).
type Script func(req *Request) Reply

// HandlerFunc serves one route of a wire format: it decodes the request,
// calls s.Answer and encodes the reply.
type HandlerFunc func(s *Server, w http.ResponseWriter, r *http.Request)

var routes = map[string]HandlerFunc{}

// Register adds a route ("POST /v1/messages", "GET /models", … in
// http.ServeMux pattern syntax) for a wire format. Call it from an init
// function of the format's file.
func Register(pattern string, h HandlerFunc) {
	if _, dup := routes[pattern]; dup {
		panic("modelserver: route registered twice: " + pattern)
	}
	routes[pattern] = h
}

// Server is a running scripted model server.
type Server struct {
	// URL is the server's base address, "http://127.0.0.1:PORT".
	URL string

	script Script
	srv    *http.Server
	ln     net.Listener

	closing chan struct{}

	mu     sync.Mutex
	log    []LogEntry
	onHold func()
}

// LogEntry records one HTTP request the server saw and what it answered.
type LogEntry struct {
	// Method and Path are the request's.
	Method, Path string
	// Request is the decoded request (nil for routes that are not model calls).
	Request *Request
	// Reply is the Script's answer (nil when none was asked).
	Reply *Reply
	// Note is a short free-form remark (e.g. "unknown route").
	Note string
}

// Start starts a server on 127.0.0.1 on a free port, answering with script.
func Start(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, ln: ln, closing: make(chan struct{})}
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { h(s, w, r) })
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		s.record(LogEntry{Method: r.Method, Path: r.URL.Path, Note: "unknown route: 404"})
		http.NotFound(w, r)
	})
	s.srv = &http.Server{Handler: mux}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	return s.srv.Close()
}

// SetOnHold sets a function run each time the Script holds a call (the
// harness interrupts the turn from it).
func (s *Server) SetOnHold(f func()) {
	s.mu.Lock()
	s.onHold = f
	s.mu.Unlock()
}

// Answer asks the Script for the reply to req and logs both. Formats call it
// once per model call. A held reply returns only when the agent drops the
// call or the server closes; the format then writes to a closed connection.
func (s *Server) Answer(r *http.Request, req *Request) Reply {
	rep := s.script(req)
	s.record(LogEntry{Method: r.Method, Path: r.URL.Path, Request: req, Reply: &rep})
	if rep.Hold {
		s.mu.Lock()
		hook := s.onHold
		s.mu.Unlock()
		if hook != nil {
			hook()
		}
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
	}
	return rep
}

// Note logs a request that is not a model call (a models list, a token
// count, a telemetry post).
func (s *Server) Note(r *http.Request, note string) {
	s.record(LogEntry{Method: r.Method, Path: r.URL.Path, Note: note})
}

func (s *Server) record(e LogEntry) {
	s.mu.Lock()
	s.log = append(s.log, e)
	s.mu.Unlock()
}

// Log returns the requests seen so far, in arrival order.
func (s *Server) Log() []LogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]LogEntry(nil), s.log...)
}

// Summary renders the log for a failing test: one line per request with
// the conversation's shape (roles, tool calls, tool results).
func (s *Server) Summary() string {
	var b strings.Builder
	for i, e := range s.Log() {
		fmt.Fprintf(&b, "%3d %s %s", i, e.Method, e.Path)
		if e.Note != "" {
			fmt.Fprintf(&b, " (%s)", e.Note)
		}
		if q := e.Request; q != nil {
			fmt.Fprintf(&b, " model=%s tools=%d msgs=%d first=%q", q.Model, len(q.Tools), len(q.Messages), clip(q.FirstUserText(), 60))
			if e.Reply != nil {
				fmt.Fprintf(&b, " → text=%q calls=%d hold=%v", clip(e.Reply.Text, 40), len(e.Reply.ToolCalls), e.Reply.Hold)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Routes lists the registered route patterns, sorted.
func Routes() []string {
	out := make([]string, 0, len(routes))
	for p := range routes {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// FirstUserText is the text of the conversation's first user message: the
// prompt a parent got from the user, or the task a subagent got.
func (q *Request) FirstUserText() string {
	for _, m := range q.Messages {
		if m.Role == "user" && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

// AllText joins the system prompt and every message's text, for scripts
// that look for a marker anywhere in the conversation.
func (q *Request) AllText() string {
	var b strings.Builder
	b.WriteString(q.System)
	for _, m := range q.Messages {
		b.WriteByte('\n')
		b.WriteString(m.Text)
	}
	return b.String()
}

// ToolResults returns every tool result in the conversation, in order.
func (q *Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range q.Messages {
		out = append(out, m.ToolResults...)
	}
	return out
}

// HasTool reports whether the agent offered the named tool.
func (q *Request) HasTool(name string) bool {
	for _, t := range q.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// Input encodes v as a tool call's arguments; it panics on values that do
// not encode (scripts pass literal maps).
func Input(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// readJSON decodes the request body (at most 64 MiB) into v.
func readJSON(r *http.Request, v any) error {
	_, err := readJSONBody(r, v)
	return err
}

// readJSONBody reads the request body (at most 64 MiB), decodes it into v
// and returns it, for Request.Body.
func readJSONBody(r *http.Request, v any) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	return body, json.Unmarshal(body, v)
}

// writeJSON answers with v as a JSON document.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events and flushes after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name "" omits the event: line. data is encoded
// as JSON unless it is a string.
func (e *sse) event(name string, data any) {
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	switch d := data.(type) {
	case string:
		fmt.Fprintf(e.w, "data: %s\n\n", d)
	default:
		b, _ := json.Marshal(d)
		fmt.Fprintf(e.w, "data: %s\n\n", b)
	}
	if e.f != nil {
		e.f.Flush()
	}
}
