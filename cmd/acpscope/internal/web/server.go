// Package web serves acpscope's stored sessions to a browser: the sessions
// list, and one session as a subagent tree and a timeline, updated live
// while another process writes to the same store. It only reads the store.
//
// Every string on the pages came from an agent and is treated as hostile:
// html/template escapes it in HTML and attributes, page data reaches the
// script as JSON (in a <script type="application/json"> block or from the
// JSON endpoints) and is put into the DOM only as text, and a strict
// Content-Security-Policy allows no inline script at all. Every agent text
// a card shows (description, type, model, agent id and status, tool
// status, prompt, answer, failure reason, earlier answers, referring tool
// calls) is also sanitised (safetext.Text, or safetext.Lines where line
// breaks matter): no control character or bidirectional override of it
// reaches the page. Ids stay as stored: they are the pages' link keys.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.html"))

// ContentSecurityPolicy is sent with every response: only the server's own
// script, style and JSON, no inline script or style element, no framing,
// no plugins, forms only to the server.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Options configures Handler.
type Options struct {
	// AllowHosts lists the host names and addresses, besides the loopback
	// ones, that a request's Host header may name (compared without the
	// port, ASCII case-insensitively, a trailing dot ignored). Every
	// request is checked: one whose Host is none of them is refused with
	// 421, so a DNS-rebinding page cannot read the store through the
	// browser. The zero value lets loopback names and addresses only.
	AllowHosts []string
	// NoLoopback refuses loopback names too: the listener is on a
	// non-loopback address, which a loopback name never reaches.
	NoLoopback bool
	// PollInterval is how often an open page asks whether the store
	// changed (default 2s).
	PollInterval time.Duration
	// Log receives request errors (default slog.Default()).
	Log *slog.Logger
	// MaxHeavy bounds the heavy requests (the pages and their JSON) that
	// run at once (default DefaultMaxHeavy); MaxWaiting more wait up to
	// HeavyWait for their turn (defaults DefaultMaxWaiting,
	// DefaultHeavyWait), and the others are answered 503 with Retry-After.
	MaxHeavy   int
	MaxWaiting int
	HeavyWait  time.Duration
	// Traffic, when set, serves the traffic view of these messages
	// (traffic.go); TrafficSource says on the page where they come from.
	Traffic       *traffic.Log
	TrafficSource string
	// Now is the server's clock (default time.Now): the pages correct
	// their own clock by it (ServerTimeHeader), so a running child's bar
	// grows with the server's time.
	Now func() time.Time
	// Stop, when set, lets the session page stop a running child that
	// holds the ACP cancel capability (stop.go).
	Stop Stopper
}

// ServerTimeHeader is on every answer: the server's time when it
// answered, in milliseconds since the Unix epoch. The pages set their
// clock by it (a browser's clock may be off), as by the session page
// data's now_ms.
const ServerTimeHeader = "Acpscope-Server-Time"

type server struct {
	store *persistence.Store
	opts  Options
	mux   *http.ServeMux
	// hosts is the set of AllowHosts, normalised by hostKey.
	hosts  map[string]bool
	gate   *gate
	tokens *tokenCache
	views  *viewCache
	// stop is set with Options.Stop.
	stop *stopControl
}

// Handler serves the pages, the JSON API and the embedded assets from s:
//
//	GET /                      the sessions list (?agent=NAME&q=TEXT)
//	GET /session?id=ID[&offset=N&limit=M]
//	                           one session: subagent tree and timeline of
//	                           the cards [N, N+M) (default 0 and
//	                           DefaultWindow, at most MaxWindow)
//	GET /api/sessions          the list as JSON (same parameters)
//	GET /api/session?id=ID[&offset=N&limit=M]
//	                           that window of the session's view as JSON
//
// The pages and their JSON are heavy requests: at most MaxHeavy run at
// once (see Options). A session's laid-out view is kept while its change
// token stays, so an unchanged session is not read again, and polls are
// answered from tokens at most half a poll interval old.
//
//	GET /api/changes[?id=ID]   {"token": …}: moves when the session (or,
//	                           without id, the store) changed
//	GET /api/card?session=ID&execution=EXEC&call=TOOLCALL
//	                           one card's prompt and result text and its
//	                           facts (CardTexts), read when its details open
//	GET /static/…              the embedded script and style sheet
//
// With Options.Traffic, the traffic view is served too (traffic.go).
func Handler(s *persistence.Store, opts Options) http.Handler {
	opts.PollInterval = orDefault(opts.PollInterval, 2*time.Second)
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.MaxHeavy = orDefault(opts.MaxHeavy, DefaultMaxHeavy)
	opts.MaxWaiting = orDefault(opts.MaxWaiting, DefaultMaxWaiting)
	opts.HeavyWait = orDefault(opts.HeavyWait, DefaultHeavyWait)
	srv := &server{store: s, opts: opts, mux: http.NewServeMux(), hosts: map[string]bool{},
		gate: newGate(opts.MaxHeavy, opts.MaxWaiting, opts.HeavyWait),
		// A poll is answered from a token at most half an interval old
		// (at most 1 s): one read per family and interval.
		tokens: &tokenCache{store: s, ttl: min(opts.PollInterval/2, time.Second), m: map[string]*tokenEntry{}},
		views:  newViewCache()}
	for _, h := range opts.AllowHosts {
		srv.hosts[hostKey(h)] = true
	}
	static, _ := fs.Sub(staticFS, "static")
	srv.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	srv.mux.HandleFunc("GET /{$}", srv.heavy(srv.listPage))
	srv.mux.HandleFunc("GET /session", srv.heavy(srv.sessionPage))
	srv.mux.HandleFunc("GET /api/sessions", srv.heavy(srv.listJSON))
	srv.mux.HandleFunc("GET /api/session", srv.heavy(srv.sessionJSON))
	srv.mux.HandleFunc("GET /api/changes", srv.changesJSON)
	srv.mux.HandleFunc("GET /api/card", srv.cardJSON)
	srv.routeTraffic()
	srv.routeLive()
	return srv
}

// orDefault is v, or d when v is not positive.
func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// ServeHTTP sets the security headers on every response, then routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set(ServerTimeHeader, strconv.FormatInt(s.opts.Now().UnixMilli(), 10))
	if !s.allowedHost(r.Host) {
		http.Error(w, "acpscope web answers only requests to the hosts it was started for (--allow-host)", http.StatusMisdirectedRequest)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// allowedHost reports whether a request's Host header names a host the
// server answers for: a loopback one (unless NoLoopback) or one of
// AllowHosts.
func (s *server) allowedHost(host string) bool {
	k := hostKey(host)
	if k == "" {
		return false
	}
	return s.hosts[k] || (!s.opts.NoLoopback && loopbackHost(k))
}

// hostKey is the comparable form of a Host header or an --allow-host
// value: without the port and the IPv6 brackets, lower case, without a
// trailing dot; an IP address in its canonical form.
func hostKey(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// loopbackHost reports whether a hostKey names this machine's loopback:
// localhost or a loopback address.
func loopbackHost(k string) bool {
	if k == "localhost" {
		return true
	}
	ip := net.ParseIP(k)
	return ip != nil && ip.IsLoopback()
}

// CheckAllowHost says what is wrong with an --allow-host value (nil when
// nothing): it must be a bare host name or address, optionally with a
// port, never a URL.
func CheckAllowHost(v string) error {
	switch {
	case hostKey(v) == "":
		return fmt.Errorf("empty host")
	case strings.ContainsAny(v, "/?#@ \t\\"):
		return fmt.Errorf("%q is not a host name or address (give it without scheme or path)", v)
	}
	return nil
}

// listData is the sessions page's data.
type listData struct {
	Agents []string     `json:"agents"`
	Agent  string       `json:"agent"`
	Text   string       `json:"text"`
	Rows   []SessionRow `json:"rows"`
	Token  string       `json:"token"`
	Poll   int64        `json:"poll_ms"`
	Limit  int          `json:"limit"`
}

// pageData wraps a page's data for its template.
type pageData struct {
	Title string
	Page  string
	Data  any
	// Session is set on the session page.
	Session *SessionRow
	// Traffic reports that the traffic view is served (render sets it).
	Traffic bool
}

func (s *server) query(r *http.Request) Query {
	q := r.URL.Query()
	return Query{Agent: q.Get("agent"), Text: q.Get("q"), Limit: persistence.DefaultSessionLimit}
}

func (s *server) loadList(ctx context.Context, q Query) (listData, error) {
	// The token first: a write racing the read moves the store past it.
	token, err := FamilyToken(ctx, s.store, "")
	if err != nil {
		return listData{}, err
	}
	rows, err := ListSessions(ctx, s.store, q)
	if err != nil {
		return listData{}, err
	}
	if rows == nil {
		rows = []SessionRow{}
	}
	return listData{Agents: agentOptions(q.Agent), Agent: q.Agent, Text: q.Text, Rows: rows, Token: token,
		Poll: s.opts.PollInterval.Milliseconds(), Limit: q.Limit}, nil
}

func (s *server) listPage(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	d, err := s.loadList(r.Context(), s.query(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "list.html", pageData{Title: "sessions", Page: "sessions", Data: d}, start)
}

func (s *server) listJSON(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadList(r.Context(), s.query(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, d)
}

// sessionData is the session page's data.
type sessionData struct {
	View SessionView `json:"view"`
	Poll int64       `json:"poll_ms"`
	// Now is the server's time of the page (ms since the Unix epoch);
	// the JSON answers carry it in ServerTimeHeader instead.
	Now int64 `json:"now_ms,omitempty"`
	// Live reports that /api/live serves (Options.Traffic or Stop), and
	// StopToken is the token a stop must carry (only with Options.Stop).
	Live      bool   `json:"live,omitempty"`
	StopToken string `json:"stop_token,omitempty"`
}

// loadSession returns the cached view of the requested session (read
// and laid out when its change token moved) and the window asked for.
func (s *server) loadSession(w http.ResponseWriter, r *http.Request) (e *viewEntry, offset, limit int, ok bool) {
	e, err := s.cachedView(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		s.fail(w, r, err)
		return nil, 0, 0, false
	}
	if !e.ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return nil, 0, 0, false
	}
	limit = intParam(r, "limit")
	if limit <= 0 {
		limit = DefaultWindow
	}
	return e, intParam(r, "offset"), min(limit, MaxWindow), true
}

func (s *server) sessionPage(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	e, offset, limit, ok := s.loadSession(w, r)
	if !ok {
		return
	}
	d := sessionData{View: e.view.Window(offset, limit), Poll: s.opts.PollInterval.Milliseconds(), Now: s.opts.Now().UnixMilli(),
		Live: s.opts.Traffic != nil || s.stop != nil}
	if s.stop != nil {
		d.StopToken = s.stop.token
	}
	s.render(w, r, "session.html", pageData{Title: "session " + d.View.Session.ID, Page: "session",
		Data: d, Session: &d.View.Session}, start)
}

func (s *server) sessionJSON(w http.ResponseWriter, r *http.Request) {
	e, offset, limit, ok := s.loadSession(w, r)
	if !ok {
		return
	}
	b, err := s.views.page(e, offset, limit, func(v SessionView) ([]byte, error) {
		return json.Marshal(sessionData{View: v, Poll: s.opts.PollInterval.Milliseconds()})
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSONBytes(w, b)
}

func (s *server) changesJSON(w http.ResponseWriter, r *http.Request) {
	token, err := s.tokens.get(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, map[string]string{"token": token})
}

// cardJSON serves one card's texts. They are read on demand, never with
// the session: a session of thousands of cards stays a small page.
func (s *server) cardJSON(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	texts, err := LoadCardTexts(r.Context(), s.store, q.Get("session"), q.Get("execution"), q.Get("call"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, texts)
}

// render executes a page template into a buffer (so a failure sends a
// clean 500) and reports the server time in a Server-Timing header, which
// the page's self-check reads.
func (s *server) render(w http.ResponseWriter, r *http.Request, name string, d pageData, start time.Time) {
	var buf strings.Builder
	d.Traffic = s.opts.Traffic != nil
	if err := templates.ExecuteTemplate(&buf, name, d); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Server-Timing", serverTiming(time.Since(start)))
	_, _ = w.Write([]byte(buf.String()))
}

func serverTiming(d time.Duration) string {
	return "app;dur=" + strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
}

func (s *server) writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	writeJSONBytes(w, b)
}

func writeJSONBytes(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client went away
	}
	s.opts.Log.Warn("acpscope web: request failed", "path", r.URL.Path, "error", err)
	http.Error(w, "the store could not be read", http.StatusInternalServerError)
}

// agentOptions is the agent filter's choices: every dialect, plus the
// current value when it is none of them (it is shown, not trusted).
func agentOptions(current string) []string {
	out := adapter.Registered()
	if current != "" && !slices.Contains(out, current) {
		out = append(out, current)
	}
	return out
}

// URL is the address a browser opens for a server listening on addr: a
// wildcard address (0.0.0.0, ::) is no host to open, so its URL names the
// loopback address, which a wildcard listener covers.
func URL(addr net.Addr) string {
	host, port := addr.String(), ""
	if tcp, ok := addr.(*net.TCPAddr); ok {
		ip := tcp.IP
		if ip == nil || ip.IsUnspecified() {
			ip = net.IPv4(127, 0, 0, 1)
		}
		host, port = ip.String(), strconv.Itoa(tcp.Port)
		return "http://" + net.JoinHostPort(host, port) + "/"
	}
	return "http://" + host + "/"
}

// HostURL is the address of the server on another host name (an
// --allow-host) at addr's port.
func HostURL(host string, addr net.Addr) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	port := ""
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
