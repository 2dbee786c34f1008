package web

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// xssCorpus is agent text built to escape each context of the pages: HTML
// text, attributes, URLs, the JSON script block, and SVG/MathML parsing.
var xssCorpus = []string{
	`<script>document.body.dataset.xss="script"</script>`,
	`"><img src=x onerror="document.body.dataset.xss='img'">`,
	`' onmouseover='document.body.dataset.xss=1' x='`,
	`javascript:document.body.dataset.xss="href"`,
	`<svg onload="document.body.dataset.xss='svg'"><script>document.body.dataset.xss=1</script></svg>`,
	`</script><script>document.body.dataset.xss="break"</script>`,
	`<iframe srcdoc="<script>parent.document.body.dataset.xss=1</script>"></iframe>`,
	`<a href="javascript:document.body.dataset.xss=1">click</a>`,
	`<math><mtext><table><mglyph><style><img src=x onerror="document.body.dataset.xss='mxss'">`,
	"{{.}} ${document.body.dataset.xss=1} \u2028\u2029 <!-- <style>*{display:none}</style>",
}

// hostileSession is a session id from the corpus too.
const hostileSession = `s"><svg onload="document.body.dataset.xss='sid'">`

// openStore opens a fresh store as acpscope does: with subagent texts and
// card facts.
func openStore(t testing.TB) *persistence.Store {
	t.Helper()
	return openStoreWith(t, persistence.WithSubagentText(), persistence.WithCardFacts())
}

// openStoreWith opens a fresh store with opts only.
func openStoreWith(t testing.TB, opts ...persistence.Option) *persistence.Store {
	t.Helper()
	s, err := persistence.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "web.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func upsert(t testing.TB, s *persistence.Store, f persistence.Frame) {
	t.Helper()
	if f.TaskID == "" {
		f.TaskID = f.TaskSessionID
	}
	if err := s.EnsureSession(context.Background(), f.TaskSessionID, f.TaskID); err != nil {
		t.Fatal(err)
	}
	if err := s.Upsert(context.Background(), f); err != nil {
		t.Fatal(err)
	}
}

func seedHostile(t testing.TB, s *persistence.Store) {
	t.Helper()
	for i, p := range xssCorpus {
		upsert(t, s, persistence.Frame{TaskSessionID: hostileSession, ToolCallID: "call-" + p,
			ExecutionID: ExecutionID("claude", "r"), ParentToolCallID: p, ToolStatus: []string{"completed", "failed"}[i%2],
			Description: p, SubagentType: p, Model: p, AgentID: p, Status: p, ChildSessionID: p,
			Prompt: p, ResultText: p, ObservedAt: t0.Add(time.Duration(i) * time.Second),
			Facts: &persistence.CardFacts{ErrorMessage: p, EarlierResults: []string{p}, ParentSessionID: p, ReferencedBy: []string{p}}})
	}
}

func get(t *testing.T, h http.Handler, target string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "127.0.0.1:8765"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func bodyOf(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var dataBlock = regexp.MustCompile(`(?s)<script type="application/json" id="page-data">(.*?)</script>`)

func TestHostileTextIsEscapedEverywhere(t *testing.T) {
	s := openStore(t)
	seedHostile(t, s)
	h := Handler(s, Options{})
	for _, target := range []string{"/", "/?q=" + url.QueryEscape(xssCorpus[1]), "/session?id=" + url.QueryEscape(hostileSession)} {
		res := get(t, h, target)
		page := bodyOf(t, res)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", target, res.StatusCode, page)
		}
		// The only markup is the template's: escaped text holds no '<', so
		// every tag outside the data block is one the templates wrote.
		checkMarkup(t, target, page)
		m := dataBlock.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: no data block", target)
		}
		// The block is JSON that round-trips every string exactly.
		var data map[string]any
		if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
			t.Fatalf("%s: data block is not JSON: %v", target, err)
		}
	}
	// The session page's heading shows the id as text.
	page := bodyOf(t, get(t, h, "/session?id="+url.QueryEscape(hostileSession)))
	if !strings.Contains(page, "<code id=\"session-id\">"+html.EscapeString(hostileSession)+"</code>") &&
		!strings.Contains(page, "<code id=\"session-id\">"+templateEscaped(hostileSession)+"</code>") {
		t.Errorf("session id not shown escaped:\n%s", page)
	}
	// The JSON API round-trips the strings: ids exactly, agent text
	// sanitised (no control character or bidi override), otherwise exact.
	var d sessionData
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/session?id="+url.QueryEscape(hostileSession)))), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.View.Cards) != len(xssCorpus) {
		t.Fatalf("%d cards", len(d.View.Cards))
	}
	for i, c := range d.View.Cards {
		if c.Description != safetext.Text(xssCorpus[i]) || c.Model != safetext.Text(xssCorpus[i]) || c.ToolCallID != "call-"+xssCorpus[i] {
			t.Errorf("card %d: %q", i, c.Description)
		}
		// The card's texts: JSON with '<', '>' and '&' escaped, so no
		// sniffing reads markup in it, and the strings round-trip.
		body := bodyOf(t, get(t, h, cardURL(c)))
		if strings.ContainsAny(body, "<>&") {
			t.Errorf("card %d: raw markup characters in the texts JSON: %s", i, body)
		}
		var texts CardTexts
		if err := json.Unmarshal([]byte(body), &texts); err != nil {
			t.Fatal(err)
		}
		shown := safetext.Lines(xssCorpus[i])
		if !texts.Stored || str(texts.Prompt) != shown || str(texts.ResultText) != shown {
			t.Errorf("card %d: texts %+v", i, texts)
		}
		// The facts' text: sanitised the same way.
		if f := texts.Facts; !f.Stored || str(f.ErrorMessage) != shown || len(f.EarlierResults) != 1 ||
			f.EarlierResults[0] != shown || len(f.ReferencedBy) != 1 || f.ReferencedBy[0] != safetext.Text(xssCorpus[i]) {
			t.Errorf("card %d: facts %+v", i, f)
		}
		if c.ErrorMessage != shown || c.ParentSessionID != xssCorpus[i] {
			t.Errorf("card %d: reason %q parent session %q", i, c.ErrorMessage, c.ParentSessionID)
		}
	}
}

// cardURL is the /api/card address of a card.
func cardURL(c Card) string {
	return "/api/card?" + url.Values{"session": {c.SessionID}, "execution": {c.Execution}, "call": {c.ToolCallID}}.Encode()
}

// /api/card serves a card's texts, with their full lengths when cut; a
// card without texts has none; a store that keeps no texts says so, and
// still serves its pages.
func TestCardTexts(t *testing.T) {
	s := openStore(t)
	long := strings.Repeat("x", persistence.MaxSubagentText+10)
	upsert(t, s, persistence.Frame{TaskSessionID: "S", ToolCallID: "a", ExecutionID: ExecutionID("claude", "r"),
		Prompt: "do it", ResultText: long, ObservedAt: t0})
	upsert(t, s, persistence.Frame{TaskSessionID: "S", ToolCallID: "b", ExecutionID: ExecutionID("claude", "r"), ObservedAt: t0})
	h := Handler(s, Options{})
	card := func(h http.Handler, call string) CardTexts {
		t.Helper()
		res := get(t, h, cardURL(Card{SessionID: "S", Execution: ExecutionID("claude", "r"), ToolCallID: call}))
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), "json") {
			t.Fatalf("%s: %d %s", call, res.StatusCode, res.Header)
		}
		var c CardTexts
		if err := json.Unmarshal([]byte(bodyOf(t, res)), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := card(h, "a")
	if !a.Stored || str(a.Prompt) != "do it" || a.PromptTruncated || a.PromptBytes != 5 {
		t.Errorf("prompt: %+v", a)
	}
	if len(str(a.ResultText)) != persistence.MaxSubagentText || !a.ResultTruncated || a.ResultBytes != int64(len(long)) {
		t.Errorf("result: %d bytes, truncated %v, of %d", len(str(a.ResultText)), a.ResultTruncated, a.ResultBytes)
	}
	if b := card(h, "b"); !b.Stored || b.Prompt != nil || b.ResultText != nil {
		t.Errorf("no texts: %+v", b)
	}
	if n := card(h, "nope"); !n.Stored || n.Prompt != nil {
		t.Errorf("unknown card: %+v", n)
	}

	// A store written without the texts table (an older acpscope, a host).
	plain := openStoreWith(t)
	upsert(t, plain, persistence.Frame{TaskSessionID: "S", ToolCallID: "a", ExecutionID: ExecutionID("claude", "r"),
		Prompt: "dropped", ObservedAt: t0})
	ph := Handler(plain, Options{})
	if c := card(ph, "a"); c.Stored || c.Prompt != nil {
		t.Errorf("a store without texts: %+v", c)
	}
	if res := get(t, ph, "/session?id=S"); res.StatusCode != http.StatusOK {
		t.Errorf("session page of a store without texts: %d", res.StatusCode)
	}
}

// checkMarkup fails when page holds markup only an escaping failure could
// have put there.
func checkMarkup(t *testing.T, target, page string) {
	t.Helper()
	for _, bad := range InjectedMarkup(page) {
		t.Errorf("%s: injected %s", target, bad)
	}
}

// templateEscaped is html/template's escaping of text (it writes &#34; and
// &#39; for quotes).
func templateEscaped(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	s := openStore(t)
	seedHostile(t, s)
	h := Handler(s, Options{})
	for _, target := range []string{"/", "/session?id=x", "/session?id=" + url.QueryEscape(hostileSession), "/api/sessions",
		"/api/session?id=nope", "/api/changes", "/api/card?session=x", "/static/app.js", "/static/app.css", "/nope", "/static/nope"} {
		res := get(t, h, target)
		if got := res.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy ||
			!strings.Contains(got, "default-src 'self'") || strings.Contains(got, "unsafe") {
			t.Errorf("%s: CSP %q", target, got)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", target, res.Header)
		}
	}
	for target, want := range map[string]int{"/session?id=x": 404, "/api/session?id=x": 404, "/nope": 404, "/static/app.js": 200} {
		if got := get(t, h, target).StatusCode; got != want {
			t.Errorf("%s: status %d, want %d", target, got, want)
		}
	}
	if ct := get(t, h, "/static/app.js").Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("app.js content type %q", ct)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

func TestLoopbackHostOnly(t *testing.T) {
	checkHosts(t, Handler(openStore(t), Options{}), map[string]bool{
		"127.0.0.1:8765": true, "localhost:8765": true, "LOCALHOST": true, "[::1]:8765": true, "127.8.9.1": true,
		"localhost.":        true,
		"evil.example:8765": false, "10.0.0.1:8765": false, "localhost.evil.example": false, "": false,
	})
}

// The Host check runs whatever the listener: with --allow-host names (and
// the bound address) only they pass, besides loopback unless the listener
// is on a specific non-loopback address.
func TestHostCheckAlways(t *testing.T) {
	s := openStore(t)
	checkHosts(t, Handler(s, Options{AllowHosts: []string{"Box.LAN", "0.0.0.0", "[fd00::1]:9"}}), map[string]bool{
		"box.lan:8765": true, "BOX.lan.": true, "0.0.0.0:8765": true, "[fd00:0::1]:8765": true, "localhost": true,
		"evil.example:8765": false, "rebind.evil.example": false, "box.lan.evil.example": false, "10.0.0.1": false,
	})
	checkHosts(t, Handler(s, Options{AllowHosts: []string{"192.0.2.7"}, NoLoopback: true}), map[string]bool{
		"192.0.2.7:8765": true, "localhost:8765": false, "127.0.0.1": false, "evil.example": false,
	})
	for v, ok := range map[string]bool{"box.lan": true, "box.lan:80": true, "[::1]": true, "": false,
		"http://box.lan/": false, "box.lan/x": false, "a b": false} {
		if err := CheckAllowHost(v); (err == nil) != ok {
			t.Errorf("CheckAllowHost(%q): %v", v, err)
		}
	}
}

func checkHosts(t *testing.T, h http.Handler, hosts map[string]bool) {
	t.Helper()
	for host, ok := range hosts {
		req := httptest.NewRequest(http.MethodGet, "/api/changes", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if (rec.Code == http.StatusOK) != ok {
			t.Errorf("Host %q: status %d", host, rec.Code)
		}
	}
}

func TestListFilterAndChanges(t *testing.T) {
	s := openStore(t)
	upsert(t, s, persistence.Frame{TaskSessionID: "cur-1", ToolCallID: "a", ExecutionID: ExecutionID("cursor", "r"),
		Description: "Summarize src", ObservedAt: t0})
	upsert(t, s, persistence.Frame{TaskSessionID: "cl-1", ToolCallID: "b", ExecutionID: ExecutionID("claude", "r"),
		Description: "Audit docs", ToolStatus: "completed", ObservedAt: t0.Add(time.Second)})
	// A poll interval of 1 ns keeps no token (they are kept half of it),
	// so every poll reads the store.
	h := Handler(s, Options{PollInterval: time.Nanosecond})
	list := func(q string) []string {
		var d listData
		if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/sessions"+q))), &d); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range d.Rows {
			ids = append(ids, r.ID+"/"+r.Agent+"/"+r.Status)
		}
		return ids
	}
	for q, want := range map[string]string{
		"":                    "cl-1/claude/complete,cur-1/cursor/open",
		"?agent=cursor":       "cur-1/cursor/open",
		"?q=AUDIT":            "cl-1/claude/complete",
		"?agent=claude&q=src": "",
	} {
		if got := strings.Join(list(q), ","); got != want {
			t.Errorf("%q: got %s, want %s", q, got, want)
		}
	}
	token := func(q string) string {
		var d map[string]string
		if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/changes"+q))), &d); err != nil {
			t.Fatal(err)
		}
		return d["token"]
	}
	all, cur, cl := token(""), token("?id=cur-1"), token("?id=cl-1")
	upsert(t, s, persistence.Frame{TaskSessionID: "cur-1", ToolCallID: "a", ExecutionID: ExecutionID("cursor", "r"),
		ToolStatus: "completed", ObservedAt: t0.Add(time.Minute)})
	if token("") == all || token("?id=cur-1") == cur || token("?id=cl-1") != cl {
		t.Fatal("change tokens did not move exactly where the store changed")
	}
	// The session page's token is the one /api/changes reports.
	var d sessionData
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/session?id=cur-1"))), &d); err != nil {
		t.Fatal(err)
	}
	if d.View.Token != token("?id=cur-1") || d.View.Session.Status != persistence.SessionComplete {
		t.Fatalf("view token %q status %q", d.View.Token, d.View.Session.Status)
	}
}

// A session whose observation is incomplete says so in the sessions list
// and on its page; the others do not.
func TestIncompleteObservationIsShown(t *testing.T) {
	s := openStoreWith(t, persistence.WithSubagentText(), persistence.WithCardFacts(), persistence.WithObservationGaps())
	upsert(t, s, persistence.Frame{TaskSessionID: "lossy", ToolCallID: "a", ExecutionID: ExecutionID("claude", "r"), ObservedAt: t0})
	upsert(t, s, persistence.Frame{TaskSessionID: "whole", ToolCallID: "b", ExecutionID: ExecutionID("claude", "r"), ObservedAt: t0})
	if err := s.MarkObservationIncomplete(context.Background(), "lossy", 4); err != nil {
		t.Fatal(err)
	}
	h := Handler(s, Options{})
	var d listData
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/sessions"))), &d); err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Rows {
		if want := r.ID == "lossy"; r.ObservationIncomplete != want || (want && r.Unobserved != 4) {
			t.Errorf("list row %s: incomplete %v (%d), want %v", r.ID, r.ObservationIncomplete, r.Unobserved, want)
		}
	}
	var p sessionData
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/session?id=lossy"))), &p); err != nil {
		t.Fatal(err)
	}
	if v := p.View; !v.Session.ObservationIncomplete || v.Session.Unobserved != 4 {
		t.Errorf("session page: incomplete %v (%d), want true (4)", v.Session.ObservationIncomplete, v.Session.Unobserved)
	}
	js := bodyOf(t, get(t, h, "/static/app.js"))
	if !strings.Contains(js, "observation_incomplete") {
		t.Error("the pages do not show observation_incomplete")
	}
}
