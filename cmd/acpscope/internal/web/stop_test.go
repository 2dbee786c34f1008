package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// fakeStopper grants cancel to the children in can and records stops.
type fakeStopper struct {
	mu      sync.Mutex
	can     map[string]bool
	stopped []string
	err     error
}

func (f *fakeStopper) CanStop(child string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.can[child]
}

func (f *fakeStopper) Stop(_ context.Context, child string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.stopped = append(f.stopped, child)
	return nil
}

// seedRunningChildren stores session P with two running children,
// "granted" and "denied", and a finished one, "done".
func seedRunningChildren(t *testing.T, s *persistence.Store) {
	for i, child := range []string{"granted", "denied", "done"} {
		status := "in_progress"
		if child == "done" {
			status = "completed"
		}
		upsert(t, s, persistence.Frame{TaskSessionID: "P", ToolCallID: "call-" + child, ExecutionID: ExecutionID("claude", "r"),
			ChildSessionID: child, Description: child, ToolStatus: status, ObservedAt: t0.Add(time.Duration(i) * time.Second)})
	}
}

var stopTokenRE = regexp.MustCompile(`"stop_token":"([0-9a-f]+)"`)

func stopToken(t *testing.T, h http.Handler) string {
	t.Helper()
	m := stopTokenRE.FindStringSubmatch(bodyOf(t, get(t, h, "/session?id=P")))
	if m == nil {
		t.Fatal("the session page carries no stop token")
	}
	return m[1]
}

func post(h http.Handler, target, origin string, form url.Values) *http.Response {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Host = "127.0.0.1:8765"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// otherToken is token with its last character changed: a wrong token
// (replacing it with "0" left a token ending in 0 right, 1 run in 16).
func otherToken(token string) string {
	last := "0"
	if strings.HasSuffix(token, "0") {
		last = "1"
	}
	return token[:len(token)-1] + last
}

// Every refusal of a stop, each with its status, and nothing sent; then
// the one stop that passes every check.
func TestStopRefusals(t *testing.T) {
	s := openStore(t)
	seedRunningChildren(t, s)
	st := &fakeStopper{can: map[string]bool{"granted": true, "done": true}}
	h := Handler(s, Options{Stop: st})
	token := stopToken(t, h)
	const origin = "http://127.0.0.1:8765"
	form := func(token, session, child string) url.Values {
		return url.Values{"token": {token}, "session": {session}, "child": {child}}
	}
	for _, c := range []struct {
		name   string
		origin string
		form   url.Values
		host   string
		want   int
	}{
		{"no origin", "", form(token, "P", "granted"), "", http.StatusForbidden},
		{"another origin", "http://evil.example", form(token, "P", "granted"), "", http.StatusForbidden},
		{"origin on another port", "http://127.0.0.1:9999", form(token, "P", "granted"), "", http.StatusForbidden},
		{"null origin", "null", form(token, "P", "granted"), "", http.StatusForbidden},
		{"no token", origin, form("", "P", "granted"), "", http.StatusForbidden},
		{"wrong token", origin, form(otherToken(token), "P", "granted"), "", http.StatusForbidden},
		{"unknown session", origin, form(token, "nope", "granted"), "", http.StatusNotFound},
		{"unknown card", origin, form(token, "P", "stranger"), "", http.StatusNotFound},
		{"no child", origin, form(token, "P", ""), "", http.StatusNotFound},
		{"child without the capability", origin, form(token, "P", "denied"), "", http.StatusConflict},
		{"rebinding host", "http://evil.example", form(token, "P", "granted"), "evil.example", http.StatusMisdirectedRequest},
	} {
		req := httptest.NewRequest(http.MethodPost, "/api/stop", strings.NewReader(c.form.Encode()))
		req.Host = "127.0.0.1:8765"
		if c.host != "" {
			req.Host = c.host
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, rec.Code, rec.Body, c.want)
		}
	}
	if res := get(t, h, "/api/stop?"+form(token, "P", "granted").Encode()); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", res.StatusCode)
	}
	if len(st.stopped) != 0 {
		t.Fatalf("a refused stop was sent: %v", st.stopped)
	}
	if res := post(h, "/api/stop", origin, form(token, "P", "granted")); res.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %d %s", res.StatusCode, bodyOf(t, res))
	}
	if len(st.stopped) != 1 || st.stopped[0] != "granted" {
		t.Fatalf("stopped %v", st.stopped)
	}
	st.err = errors.New("the agent's input is closed")
	if res := post(h, "/api/stop", origin, form(token, "P", "granted")); res.StatusCode != http.StatusBadGateway {
		t.Errorf("failed send: %d", res.StatusCode)
	}
	// Another server (another process) has another token.
	if other := stopToken(t, Handler(s, Options{Stop: st})); other == token {
		t.Error("two servers share a stop token")
	}
}

// Without Options.Stop there is no stop route and no token; /api/live
// serves the traffic's activity of the running children only.
func TestLiveWithoutStop(t *testing.T) {
	s := openStore(t)
	seedRunningChildren(t, s)
	log := traffic.New(traffic.Options{})
	log.Add(capture.FromAgent, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"granted","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"working"}}}}`), t0)
	h := Handler(s, Options{Traffic: log})
	if page := bodyOf(t, get(t, h, "/session?id=P")); strings.Contains(page, "stop_token") || !strings.Contains(page, `"live":true`) {
		t.Errorf("page data without Stop: %s", dataBlock.FindString(page))
	}
	if res := post(h, "/api/stop", "http://127.0.0.1:8765", url.Values{"child": {"granted"}}); res.StatusCode == http.StatusAccepted {
		t.Error("a stop was accepted without Options.Stop")
	}
	var a liveAnswer
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/live?id=P"))), &a); err != nil {
		t.Fatal(err)
	}
	if a.Stop || len(a.Children) != 2 || a.Children["granted"].Message != "working" || a.Children["granted"].CanStop || a.Children["denied"].Seen {
		t.Errorf("live %+v", a)
	}
	if res := get(t, Handler(s, Options{}), "/api/live?id=P"); res.StatusCode != http.StatusNotFound {
		t.Errorf("/api/live without traffic or stop: %d", res.StatusCode)
	}
}
