package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// hostileTraffic fills a log with the corpus as ids, methods and text,
// bidirectional overrides and control characters, and one frame larger
// than a kept frame.
func hostileTraffic(t testing.TB) *traffic.Log {
	t.Helper()
	l := traffic.New(traffic.Options{MaxFrameBytes: 4096})
	add := func(from capture.Direction, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		l.Add(from, b, t0)
	}
	add(capture.FromClient, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{}})
	add(capture.FromAgent, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"sessionId": hostileSession}})
	for i, p := range xssCorpus {
		add(capture.FromAgent, map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
			"sessionId": hostileSession, "update": map[string]any{"sessionUpdate": p, "toolCallId": "call-" + p,
				"title": p + "\u202e\u2066\x01\x1b[31m\u0085"}}})
		add(capture.FromClient, map[string]any{"jsonrpc": "2.0", "id": p, "method": p, "params": map[string]any{"sessionId": p}})
		add(capture.FromAgent, map[string]any{"jsonrpc": "2.0", "id": p, "error": map[string]any{"code": i, "message": p}})
	}
	add(capture.FromAgent, map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
		"sessionId": hostileSession, "update": map[string]any{"sessionUpdate": "agent_message_chunk",
			"content": map[string]any{"type": "text", "text": strings.Repeat("</script>\u202e", 2000)}}}})
	l.Add(capture.FromAgent, []byte("</script><script>document.body.dataset.xss='raw'</script>\u202e\x7f"), t0)
	return l
}

func TestTrafficRoutesOnlyWithALog(t *testing.T) {
	h := Handler(openStore(t), Options{})
	for _, p := range []string{"/traffic", "/api/traffic", "/traffic/card?session=s"} {
		if r := get(t, h, p); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s without a traffic log: %d", p, r.StatusCode)
		}
	}
	if page := bodyOf(t, get(t, h, "/")); strings.Contains(page, `href="/traffic"`) {
		t.Errorf("the sessions page links a traffic view that is not served")
	}
}

func TestTrafficHostileValues(t *testing.T) {
	s := openStore(t)
	seedHostile(t, s)
	h := Handler(s, Options{Traffic: hostileTraffic(t), TrafficSource: xssCorpus[5]})

	page := bodyOf(t, get(t, h, "/traffic?session="+url.QueryEscape(hostileSession)+"&method="+url.QueryEscape(xssCorpus[0])))
	checkMarkup(t, "/traffic", page)
	if strings.Contains(page, "<svg") {
		t.Errorf("the filter reached the page as markup")
	}
	list := bodyOf(t, get(t, h, "/"))
	if !strings.Contains(list, `href="/traffic"`) {
		t.Errorf("the sessions page does not link the traffic view")
	}
	session := bodyOf(t, get(t, h, "/session?id="+url.QueryEscape(hostileSession)))
	checkMarkup(t, "/session", session)
	if !strings.Contains(session, `href="/traffic?session=`+url.QueryEscape(hostileSession)) && !strings.Contains(session, `href="/traffic?session=s%22%3e%3csvg`) {
		t.Errorf("the session page does not link its traffic:\n%s", session[:min(len(session), 1500)])
	}

	r := get(t, h, "/api/traffic?after=0")
	raw := bodyOf(t, r)
	if r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
	if strings.Contains(raw, "<") || strings.Contains(raw, "\u202e") || strings.Contains(raw, "\u2028") {
		t.Errorf("the JSON carries a raw '<', bidi override or line separator")
	}
	var a trafficAnswer
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Frames) != 2+3*len(xssCorpus)+2 || a.Last != uint64(len(a.Frames)) {
		t.Fatalf("%d frames, last %d", len(a.Frames), a.Last)
	}
	for _, f := range a.Frames {
		if strings.ContainsFunc(f.Text, func(r rune) bool { return r != '\n' && safetext.Forbidden(r) }) {
			t.Errorf("frame %d: text carries a forbidden rune: %q", f.Seq, f.Text)
		}
	}
	big := a.Frames[len(a.Frames)-2]
	if !big.Truncated || big.Size <= 4096 || len(big.Text) > 4096*6 {
		t.Errorf("huge frame: truncated %v, size %d, text %d", big.Truncated, big.Size, len(big.Text))
	}
	if last := a.Frames[len(a.Frames)-1]; last.Kind != "invalid" || !strings.Contains(last.Text, `\u202e\u007f`) {
		t.Errorf("raw line: %+v", last)
	}
	// The error answers take their requests' method and session.
	if f := a.Frames[4]; f.Kind != "error" || f.Method != xssCorpus[0] || f.Session != xssCorpus[0] {
		t.Errorf("error answer: %+v", f)
	}

	filtered := decodeTraffic(t, h, "/api/traffic?session="+url.QueryEscape(xssCorpus[1]))
	if len(filtered.Frames) != 2 || filtered.Frames[0].Method != xssCorpus[1] {
		t.Errorf("session filter: %+v", filtered.Frames)
	}
	byMethod := decodeTraffic(t, h, "/api/traffic?method=session/update&after=3")
	if len(byMethod.Frames) != len(xssCorpus) || byMethod.Frames[0].Seq != 6 {
		t.Errorf("method filter after 3: %d frames", len(byMethod.Frames))
	}

	// Each tool call's message links to its card on the session page.
	for i, p := range xssCorpus {
		r := get(t, h, "/traffic/card?session="+url.QueryEscape(hostileSession)+"&call="+url.QueryEscape("call-"+p))
		loc := r.Header.Get("Location")
		if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/session?id="+url.QueryEscape(hostileSession)+"&offset=") || !strings.HasSuffix(loc, "#card-0") {
			t.Errorf("card link %d: %d %q", i, r.StatusCode, loc)
		}
	}
	// A child session's message links to the card that holds it.
	r = get(t, h, "/traffic/card?session="+url.QueryEscape(xssCorpus[2]))
	if loc := r.Header.Get("Location"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/session?id="+url.QueryEscape(hostileSession)) {
		t.Errorf("child session link: %d %q", r.StatusCode, loc)
	}
	if r := get(t, h, "/traffic/card?session="+url.QueryEscape(hostileSession)+"&call=none"); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown card: %d", r.StatusCode)
	}
}

// The page's answer is bounded: the rest comes with the next poll.
func TestTrafficAnswerIsBounded(t *testing.T) {
	l := traffic.New(traffic.Options{})
	for range trafficPageFrames + 10 {
		l.Add(capture.FromAgent, []byte(`{"jsonrpc":"2.0","method":"m","params":{"sessionId":"s"}}`), t0)
	}
	h := Handler(openStoreWith(t), Options{Traffic: l})
	a := decodeTraffic(t, h, "/api/traffic")
	if len(a.Frames) != trafficPageFrames || !a.More || a.Last != trafficPageFrames {
		t.Fatalf("%d frames, more %v, last %d", len(a.Frames), a.More, a.Last)
	}
	b := decodeTraffic(t, h, "/api/traffic?after=500")
	if len(b.Frames) != 10 || b.More || b.Last != trafficPageFrames+10 {
		t.Fatalf("then %d frames, more %v, last %d", len(b.Frames), b.More, b.Last)
	}
	c := decodeTraffic(t, h, "/api/traffic?tail=3")
	if len(c.Frames) != 3 || c.Frames[0].Seq != trafficPageFrames+8 {
		t.Fatalf("tail 3: %d frames", len(c.Frames))
	}
}

func decodeTraffic(t *testing.T, h http.Handler, target string) trafficAnswer {
	t.Helper()
	var a trafficAnswer
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, target))), &a); err != nil {
		t.Fatal(err)
	}
	return a
}
