package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// The browser tests drive a real headless Chromium; they run under
// ACPSCOPE_BROWSER_TESTS=1 (`make web-test`, which installs Debian's
// Chromium when missing) and skip otherwise. The page's own script
// publishes what it rendered as data-* attributes of <body> (counts, its
// render time, the server time from Server-Timing, injected elements),
// which a DOM dump reveals (webtest.SelfCheck).

// processCPU is this process's CPU time so far (user and system): on a
// loaded machine, the part of a request's wall time that is its own.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raceDetector is set when the tests run under -race, which makes the
// logged timings unrepresentative.
var raceDetector bool

func wantAttr(t *testing.T, attrs map[string]string, key, want string) {
	t.Helper()
	if attrs[key] != want {
		t.Errorf("data-%s = %q, want %q (all: %v)", key, attrs[key], want, attrs)
	}
}

// serveStore serves the store at dsn as `acpscope web` does, wrapped by
// wrap when non-nil.
func serveStore(t *testing.T, dsn string, wrap func(http.Handler) http.Handler) (*persistence.Store, string) {
	t.Helper()
	s, err := persistence.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = web.Handler(s, web.Options{PollInterval: 200 * time.Millisecond})
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s, srv.URL + "/"
}

// noInjectedMarkup fails when the rendered DOM holds an element or
// attribute that only the corpus could have put there.
func noInjectedMarkup(t *testing.T, what, dom string) {
	t.Helper()
	for _, bad := range web.InjectedMarkup(dom) {
		t.Errorf("%s: injected %s", what, bad)
	}
}

func TestBrowserDemo(t *testing.T) {
	webtest.Chromium(t)
	t.Parallel()
	db := replayDemo(t)
	_, base := serveStore(t, db, nil)

	list := webtest.DumpDOM(t, base)
	attrs := webtest.SelfCheck(t, list)
	wantAttr(t, attrs, "rows", "2")
	wantAttr(t, attrs, "injected", "0")
	for _, want := range []string{`href="/session?id=cur-7f3a"`, `href="/session?id=cl-91b0"`, ">claude<", ">cursor<"} {
		if !strings.Contains(list, want) {
			t.Errorf("sessions page lacks %s", want)
		}
	}
	filtered := webtest.SelfCheck(t, webtest.DumpDOM(t, base+"?agent=cursor"))
	wantAttr(t, filtered, "rows", "1")

	// The details read the card's prompt and result text from the store.
	session := webtest.DumpDOM(t, base+"session?id=cl-91b0#card-1", "--virtual-time-budget=3000")
	attrs = webtest.SelfCheck(t, session)
	noInjectedMarkup(t, "demo session", session)
	wantAttr(t, attrs, "tree-nodes", "2")
	wantAttr(t, attrs, "bars", "2")
	wantAttr(t, attrs, "injected", "0")
	wantAttr(t, attrs, "card-texts", "stored")
	for _, want := range []string{`class="node st-complete"`, `class="bar complete async sel"`, "<dd>Audit the docs</dd>", "<dd>docs-auditor</dd>",
		`<dd class="texts"><div class="text">Check every README link and report broken ones</div></dd>`,
		`<dt>Result</dt><dd class="texts">not reported</dd>`} {
		if !strings.Contains(session, want) {
			t.Errorf("session page lacks %s", want)
		}
	}

	// The screenshot (docs/acpscope-web.png) shows a card with both texts.
	png := filepath.Join(t.TempDir(), "session.png")
	webtest.Run(t, "--window-size=1280,820", "--hide-scrollbars", "--virtual-time-budget=3000", "--screenshot="+png, base+"session?id=cl-91b0#card-0")
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10_000 {
		t.Fatalf("screenshot: %d bytes, %v", len(b), err)
	}
	if out := os.Getenv("ACPSCOPE_WEB_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The hostile capture puts an XSS corpus (script tags, event attributes,
// javascript: URLs, SVG and MathML payloads, a script-block breakout) into
// the session id, tool call ids, descriptions, types, models, prompts and
// results; every card's details are opened, so the prompts and results
// are drawn.
// Each payload would set data-xss on <body> if it ran.
func TestBrowserHostileCaptureExecutesNothing(t *testing.T) {
	webtest.Chromium(t)
	t.Parallel()
	db := filepath.Join(t.TempDir(), "hostile.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", db, filepath.Join("testdata", "hostile_web.jsonl")); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	_, base := serveStore(t, db, nil)
	const session = `x"><svg onload="document.body.dataset.xss='sid'">`
	pages := map[string]string{
		"sessions": base,
		"filtered": base + "?q=" + url.QueryEscape(`<script>`),
		"session":  base + "session?id=" + url.QueryEscape(session),
	}
	// Every card's details, whose prompt and result text carry the corpus.
	for i := range 10 {
		pages[fmt.Sprintf("session, details %d", i)] = base + "session?id=" + url.QueryEscape(session) + fmt.Sprintf("#card-%d", i)
	}
	for what, u := range pages {
		dom := webtest.DumpDOM(t, u, "--virtual-time-budget=3000")
		attrs := webtest.SelfCheck(t, dom)
		if v, fired := attrs["xss"]; fired {
			t.Errorf("%s: a payload ran (data-xss=%q)", what, v)
		}
		wantAttr(t, attrs, "injected", "0")
		noInjectedMarkup(t, what, dom)
		if strings.HasPrefix(what, "session,") || what == "session" {
			wantAttr(t, attrs, "tree-nodes", "10")
			wantAttr(t, attrs, "bars", "10")
			if !strings.Contains(dom, `&lt;svg onload="document.body.dataset.xss='sid'"&gt;`) {
				t.Errorf("%s: the session id is not shown as text", what)
			}
		} else if what == "sessions" {
			wantAttr(t, attrs, "rows", "1")
		}
		if strings.HasPrefix(what, "session, details") {
			wantAttr(t, attrs, "card-texts", "stored")
		}
		if what == "session, details 1" {
			const img = `"&gt;&lt;img src=x onerror="document.body.dataset.xss='img'"&gt;`
			if !strings.Contains(dom, `<dd>`+img+`</dd>`) {
				t.Errorf("details do not show the description as text")
			}
			if !strings.Contains(dom, `<dt>Prompt</dt><dd class="texts"><div class="text">`+img+`</div></dd>`) ||
				!strings.Contains(dom, `<dt>Result</dt><dd class="texts"><div class="text">`+img+`</div></dd>`) {
				t.Errorf("details do not show the prompt and result as text")
			}
		}
	}
}

// An open session page redraws when the store changes: the first poll of
// the change mark finds a card written meanwhile (as `acpscope run` would).
func TestBrowserLiveUpdate(t *testing.T) {
	webtest.Chromium(t)
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "live.db")
	var once sync.Once
	var writer *persistence.Store
	record := func(call, status string) {
		if err := writer.Upsert(context.Background(), persistence.Frame{TaskSessionID: "live-1", TaskID: "live-1",
			ToolCallID: call, ExecutionID: web.ExecutionID("claude", "r"), ToolStatus: status, TurnID: "turn-" + call,
			Description: "written while the page is open " + call}); err != nil {
			t.Error(err)
		}
	}
	writer, base := serveStore(t, dsn, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/changes" {
				once.Do(func() { record("late", "in_progress"); record("first", "completed") })
			}
			h.ServeHTTP(w, r)
		})
	})
	if err := writer.EnsureSession(context.Background(), "live-1", "live-1"); err != nil {
		t.Fatal(err)
	}
	record("first", "in_progress")

	// This store was made without subagent texts (as by an older acpscope
	// or a host): the page still serves, and the details say so.
	dom := webtest.DumpDOM(t, base+"session?id=live-1#card-0", "--virtual-time-budget=5000")
	attrs := webtest.SelfCheck(t, dom)
	wantAttr(t, attrs, "card-texts", "not-stored")
	if !strings.Contains(dom, "not stored (this store keeps no prompts)") || !strings.Contains(dom, "not stored (this store keeps no result texts)") {
		t.Errorf("the details do not say the store keeps no texts")
	}
	if n, _ := strconv.Atoi(attrs["renders"]); n < 2 {
		t.Fatalf("the page did not redraw: %v", attrs)
	}
	wantAttr(t, attrs, "tree-nodes", "2")
	wantAttr(t, attrs, "bars", "2")
	// The two cards began in two turns: both marked on the timeline, and
	// each card tagged with its turn.
	wantAttr(t, attrs, "turn-marks", "2")
	if !strings.Contains(dom, `class="tag turn">turn 2<`) {
		t.Errorf("the cards are not tagged with their turns")
	}
	if !strings.Contains(dom, "written while the page is open late") || !strings.Contains(dom, `class="bar complete`) {
		t.Errorf("the redraw lacks the new card or the settled status")
	}

	list := webtest.DumpDOM(t, base, "--virtual-time-budget=3000")
	wantAttr(t, webtest.SelfCheck(t, list), "rows", "1")
}

// A session with 5,000 subagents: nested three deep, up to 200 running at
// once, some failed, cancelled, open or in the background. The numbers
// (server time, the page's own render time) are logged, not asserted.
func TestBrowserFiveThousandSubagents(t *testing.T) {
	webtest.Chromium(t)
	t.Parallel()
	const n = 5000
	dsn := filepath.Join(t.TempDir(), "big.db")
	s, base := serveStore(t, dsn, nil)
	seedStart := time.Now()
	webtest.SeedSubagents(t, s, "big", web.ExecutionID("claude", "r"), n)
	t.Logf("seeded %d subagents in %v", n, time.Since(seedStart))

	// Server time, measured around the handler.
	h := web.Handler(s, web.Options{})
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/session?id=big&limit=5000", nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		t0, cpu0 := time.Now(), processCPU(t)
		h.ServeHTTP(rec, req)
		t.Logf("5,000 subagents: server time %v wall, %v CPU (%d bytes)", time.Since(t0), processCPU(t)-cpu0, rec.Body.Len())
	}

	// By default a page shows a window of the cards, with a pager.
	first := webtest.DumpDOM(t, base+"session?id=big")
	wantAttr(t, webtest.SelfCheck(t, first), "tree-nodes", strconv.Itoa(web.DefaultWindow))
	if !strings.Contains(first, "cards 1–1000 of 5000") || !strings.Contains(first, "next ›") {
		t.Errorf("the first window has no pager")
	}
	dom := webtest.DumpDOM(t, base+"session?id=big&limit=5000")
	attrs := webtest.SelfCheck(t, dom)
	wantAttr(t, attrs, "tree-nodes", strconv.Itoa(n))
	wantAttr(t, attrs, "bars", strconv.Itoa(n))
	wantAttr(t, attrs, "injected", "0")
	t.Logf("5,000 subagents in Chromium: server %s ms (Server-Timing), page render %s ms, %s lanes",
		attrs["server-ms"], attrs["render-ms"], attrs["lanes"])
	if raceDetector {
		t.Log("timings taken under -race: run without it (make web-bench) for representative numbers")
	}
}

// Every fact the store keeps about a card reaches the page, inert: the
// failed card's reason (hostile markup and a bidi override, shown as text
// with the override neutralised), the earlier answers of a child messaged
// again, the unknown child's own badge and the tool calls referencing it
// (one id hostile), and the nested child's link to its parent card.
func TestBrowserCardFacts(t *testing.T) {
	webtest.Chromium(t)
	t.Parallel()
	db := filepath.Join(t.TempDir(), "facts.db")
	writer, err := persistence.Open(context.Background(), db, persistence.WithSubagentText(), persistence.WithCardFacts())
	if err != nil {
		t.Fatal(err)
	}
	webtest.SeedCardTruths(t, writer, web.ExecutionID("claude", "r"))
	writer.Close()
	_, base := serveStore(t, db, nil)
	shown := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(webtest.HostileFactShown)
	for card, wants := range map[int][]string{
		0: {`<dt>Failure reason</dt><dd class="texts"><div class="text reason-text">` + shown + `</div></dd>`,
			`<span class="reason" title="` + strings.ReplaceAll(shown, `"`, "&quot;") + `">` + shown + `</span>`},
		1: {`<summary>2 earlier answers</summary>`, `<li><div class="text">first answer</div></li>`,
			`<li><div class="text">` + shown + `</div></li>`, `<div class="text">third answer</div>`},
		2: {`<span class="tag unknown">not tracked</span>`, `class="node st-unknown`, `class="bar unknown`,
			"<dd>unknown: the agent no longer tracks this child",
			`<dt>Referenced by</dt><dd><code class="ref-id">t_stop</code> · <code class="ref-id">t_&lt;b&gt;msg&lt;/b&gt;` + "\ufffd</code></dd>",
			`<span class="tag ref" title="referenced by t_stop, t_&lt;b&gt;msg&lt;/b&gt;` + "\ufffd" + `">referenced ×2</span>`},
		4: {`<dt>Parent card</dt><dd><a class="card-link" href="#card-1" data-i="1">general-purpose · card again</a></dd>`,
			"<dd>S</dd>"},
	} {
		what := fmt.Sprintf("card %d", card)
		dom := webtest.DumpDOM(t, base+"session?id=S"+fmt.Sprintf("#card-%d", card), "--virtual-time-budget=3000")
		attrs := webtest.SelfCheck(t, dom)
		if v, fired := attrs["xss"]; fired {
			t.Errorf("%s: a payload ran (data-xss=%q)", what, v)
		}
		wantAttr(t, attrs, "injected", "0")
		noInjectedMarkup(t, what, dom)
		wantAttr(t, attrs, "tree-nodes", "5")
		wantAttr(t, attrs, "unknown", "1")
		wantAttr(t, attrs, "reasons", "1")
		wantAttr(t, attrs, "referenced", "1")
		wantAttr(t, attrs, "card-facts", "stored")
		if card == 1 {
			wantAttr(t, attrs, "earlier-shown", "2")
		}
		if strings.ContainsRune(dom, '\u202e') {
			t.Errorf("%s: a bidi override reached the page", what)
		}
		for _, want := range wants {
			if !strings.Contains(dom, want) {
				t.Errorf("%s: the page lacks %s", what, want)
			}
		}
	}
}
