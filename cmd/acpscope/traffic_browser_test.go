package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// anyTag matches one tag of a serialised DOM (whose attribute values
// carry no raw '>').
var anyTag = regexp.MustCompile(`<[^>]*>`)

// hostileTrafficCapture is the hostile capture (testdata/hostile_web.jsonl)
// with more messages after it: JSON that closes a script block, bidi
// overrides and isolates and control characters (escaped in the JSON, and
// raw where JSON allows it) in methods, ids and text, and one frame of
// 300 KiB, larger than the traffic view keeps. It returns the capture's
// path and its message count.
func hostileTrafficCapture(t *testing.T) (string, int) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "hostile_web.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.Write(src)
	const session = `x"><svg onload="document.body.dataset.xss='sid'">`
	add := func(from capture.Direction, msg any) {
		// As a peer would write it: '<' and '>' unescaped.
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"from": from, "msg": msg, "t": 5000}); err != nil {
			t.Fatal(err)
		}
	}
	breakout := `</script><script>document.body.dataset.xss="traffic"</script>`
	add(capture.FromAgent, map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
		"sessionId": session, "update": map[string]any{"sessionUpdate": "agent_message_chunk",
			"content": map[string]any{"type": "text", "text": breakout + "\u202e\u2066evil\u2069\x01\x1b[2J\u0085\u2028"}}}})
	add(capture.FromClient, map[string]any{"jsonrpc": "2.0", "id": breakout + "\u202e", "method": breakout + "\u202e",
		"params": map[string]any{"sessionId": session}})
	add(capture.FromAgent, map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
		"sessionId": session, "update": map[string]any{"sessionUpdate": "agent_message_chunk",
			"content": map[string]any{"type": "text", "text": strings.Repeat(breakout+"\u202e", 300<<10/len(breakout))}}}})
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := capture.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, len(c.Entries)
}

// The traffic view of a hostile capture (web --capture) runs none of the
// corpus, shows every message as text with its bidi overrides and control
// characters escaped, marks the huge frame as cut, filters by session,
// and links a tool call's message to its card.
func TestBrowserTrafficHostile(t *testing.T) {
	webtest.Chromium(t)
	t.Parallel()
	db := filepath.Join(t.TempDir(), "hostile.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", db, filepath.Join("testdata", "hostile_web.jsonl")); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	path, n := hostileTrafficCapture(t)
	tv, err := captureTraffic(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := persistence.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.Handler(s, web.Options{PollInterval: 200 * time.Millisecond, Traffic: tv.log, TrafficSource: tv.source}))
	t.Cleanup(func() { srv.Close(); s.Close() })
	base := srv.URL + "/"
	const session = `x"><svg onload="document.body.dataset.xss='sid'">`

	check := func(what, u string) (string, map[string]string) {
		dom := webtest.DumpDOM(t, u, "--virtual-time-budget=3000")
		attrs := webtest.SelfCheck(t, dom)
		if v, fired := attrs["xss"]; fired {
			t.Errorf("%s: a payload ran (data-xss=%q)", what, v)
		}
		wantAttr(t, attrs, "injected", "0")
		noInjectedMarkup(t, what, dom)
		// What is shown (the text between tags; attribute values are the
		// links' and filters' keys, kept as they are). The session page's
		// own sanitising is its tests' (TestBrowserHostileCaptureExecutesNothing).
		shown := anyTag.ReplaceAllString(dom, "")
		if i := strings.IndexAny(shown, "\u202e\u2066\u2069\x01\x1b"); i >= 0 && what != "the linked card" {
			t.Errorf("%s: a bidi override or control character is shown raw: %q", what, shown[max(0, i-200):min(len(shown), i+50)])
		}
		return dom, attrs
	}

	dom, attrs := check("traffic", base+"traffic")
	wantAttr(t, attrs, "frames", strconv.Itoa(n))
	wantAttr(t, attrs, "cut", "1")
	for _, want := range []string{
		`\u202e\u2066evil\u2069\u0001\u001b[2J\u0085\u2028`,
		`&lt;/script&gt;&lt;script&gt;document.body.dataset.xss=\"traffic\"&lt;/script&gt;`,
		`class="cut"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the traffic page lacks %s", want)
		}
	}

	_, attrs = check("traffic of the session", base+"traffic?session="+url.QueryEscape(session))
	if got, _ := strconv.Atoi(attrs["frames"]); got == 0 || got >= n {
		t.Errorf("the session filter shows %d of %d messages", got, n)
	}
	_, attrs = check("traffic by method", base+"traffic?method="+url.QueryEscape(`</script><script>document.body.dataset.xss="traffic"</script>`+"\u202e"))
	wantAttr(t, attrs, "frames", "1")

	// A tool call's message links to its card on the session page.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := `toolu_0<script>document.body.dataset.xss="script"</script>`
	r, err := client.Get(base + "traffic/card?session=" + url.QueryEscape(session) + "&call=" + url.QueryEscape(call))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	loc := r.Header.Get("Location")
	if r.StatusCode != http.StatusSeeOther || !strings.HasSuffix(loc, "#card-0") {
		t.Fatalf("card link: %d %q", r.StatusCode, loc)
	}
	_, attrs = check("the linked card", srv.URL+loc)
	wantAttr(t, attrs, "card-texts", "stored")
}

// A capture longer than the log's bounds shows its latest 10,000
// messages, 2,000 of them in the page, and says how many were dropped.
// The wall time of the page's load is logged (no assertion).
func TestBrowserTrafficBounds(t *testing.T) {
	webtest.Chromium(t)
	t.Parallel()
	var b bytes.Buffer
	const n = 12_000
	for i := range n {
		fmt.Fprintf(&b, `{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s%d","update":{"sessionUpdate":"agent_message_chunk","toolCallId":"t%d","content":{"type":"text","text":"%s"}}}},"t":%d}`+"\n",
			i%7, i, strings.Repeat("chunk ", 80), i)
	}
	path := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tv, err := captureTraffic(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := persistence.Open(t.Context(), filepath.Join(t.TempDir(), "traffic.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.Handler(s, web.Options{PollInterval: 200 * time.Millisecond, Traffic: tv.log, TrafficSource: tv.source}))
	t.Cleanup(func() { srv.Close(); s.Close() })
	start := time.Now()
	dom := webtest.DumpDOM(t, srv.URL+"/traffic", "--virtual-time-budget=10000")
	t.Logf("%d-message capture: the page loaded and drew in %v wall (%d KB DOM)", n, time.Since(start), len(dom)/1000)
	attrs := webtest.SelfCheck(t, dom)
	wantAttr(t, attrs, "frames", "2000")
	wantAttr(t, attrs, "last", strconv.Itoa(n))
	if got := strings.Count(dom, `class="frame `); got != 2000 {
		t.Errorf("%d messages in the page, want 2000", got)
	}
	if !strings.Contains(dom, `data-seq="10001"`) || strings.Contains(dom, `data-seq="10000"`) {
		t.Errorf("the page does not hold the latest 2,000 messages")
	}
	if !strings.Contains(dom, "10000 messages kept") || !strings.Contains(dom, "2000 older ones dropped") {
		t.Errorf("the page does not say what the log kept and dropped")
	}
}
