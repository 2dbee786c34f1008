package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// A session page carries a window of the session's cards, never all of
// them: a large session stays a small page, and the other windows are
// read by offset.
func TestSessionPageIsAWindow(t *testing.T) {
	s := openStore(t)
	const n = 2500
	webtest.SeedSubagents(t, s, "big", ExecutionID("claude", "r"), n)
	h := Handler(s, Options{})
	var d sessionData
	body := bodyOf(t, get(t, h, "/api/session?id=big"))
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.View.Cards) != DefaultWindow || d.View.Total != n || d.View.Offset != 0 {
		t.Fatalf("the page carries %d of %d cards from %d, want the first %d", len(d.View.Cards), d.View.Total, d.View.Offset, DefaultWindow)
	}
	if max := DefaultWindow * 1024; len(body) > max {
		t.Fatalf("the page is %d bytes, bound %d", len(body), max)
	}
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/session?id=big&offset=2000&limit=9999999"))), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.View.Cards) != n-2000 || d.View.Offset != 2000 || d.View.Cards[0].ToolCallID != "call-02000" ||
		d.View.Cards[0].Parent != 200 {
		t.Fatalf("window from 2000: %d cards from %d, first %+v", len(d.View.Cards), d.View.Offset, d.View.Cards[0])
	}
	page := bodyOf(t, get(t, h, "/session?id=big"))
	if max := DefaultWindow * 1536; len(page) > max {
		t.Fatalf("the HTML page is %d bytes, bound %d", len(page), max)
	}
}

// At most MaxHeavy heavy requests run; MaxWaiting more wait up to
// HeavyWait, and the others are answered 503 with Retry-After. Polls are
// not heavy and pass meanwhile.
func TestHeavyRequestsAreCapped(t *testing.T) {
	s := openStore(t)
	upsert(t, s, persistence.Frame{TaskSessionID: "s", ToolCallID: "a", ExecutionID: ExecutionID("claude", "r"), ObservedAt: t0})
	h := Handler(s, Options{MaxHeavy: 1, MaxWaiting: 1, HeavyWait: 200 * time.Millisecond})
	srv := h.(*server)
	srv.gate.slots <- struct{}{} // a heavy request is running
	waited := make(chan *http.Response)
	go func() { waited <- serve(h, "/api/session?id=s") }()
	for srv.gate.waiting.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	// The queue is full: refused at once.
	if r := serve(h, "/session?id=s"); r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("over the queue: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := serve(h, "/api/changes?id=s"); r.StatusCode != http.StatusOK {
		t.Fatalf("a poll while the server is full: %d", r.StatusCode)
	}
	// The waiting one ran out of time.
	if r := <-waited; r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("after the wait: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}
	<-srv.gate.slots
	go func() { waited <- serve(h, "/api/session?id=s") }()
	if r := <-waited; r.StatusCode != http.StatusOK {
		t.Fatalf("with a free slot: %d", r.StatusCode)
	}
}

// Many pollers of one session share one read of the store per interval,
// and an unchanged session is laid out once however often it is asked
// for; a change is read again.
func TestPollsAndViewsAreShared(t *testing.T) {
	s := openStore(t)
	upsert(t, s, persistence.Frame{TaskSessionID: "s", ToolCallID: "a", ExecutionID: ExecutionID("claude", "r"), ObservedAt: t0})
	h := Handler(s, Options{})
	srv := h.(*server)
	srv.tokens.ttl = time.Hour // however slowly the polls arrive
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if r := serve(h, "/api/changes?id=s"); r.StatusCode != http.StatusOK {
				t.Errorf("poll: %d", r.StatusCode)
			}
		})
	}
	wg.Wait()
	if n := srv.tokens.reads.Load(); n != 1 {
		t.Fatalf("100 polls read the store %d times, want once", n)
	}
	for range 5 {
		if r := serve(h, "/api/session?id=s"); r.StatusCode != http.StatusOK {
			t.Fatalf("session: %d", r.StatusCode)
		}
	}
	if n := srv.views.builds.Load(); n != 1 {
		t.Fatalf("an unchanged session was laid out %d times, want once", n)
	}
	fresh := Handler(s, Options{PollInterval: time.Nanosecond}).(*server)
	serve(fresh, "/api/session?id=s")
	upsert(t, s, persistence.Frame{TaskSessionID: "s", ToolCallID: "b", ExecutionID: ExecutionID("claude", "r"), ObservedAt: t0})
	var d sessionData
	if err := json.NewDecoder(serve(fresh, "/api/session?id=s").Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if n := fresh.views.builds.Load(); n != 2 || len(d.View.Cards) != 2 {
		t.Fatalf("after a change: %d builds, %d cards; want 2 and 2", n, len(d.View.Cards))
	}
}

func serve(h http.Handler, target string) *http.Response {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "127.0.0.1:8765"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// Asking for many sessions, stored or not, keeps a bounded number of
// views and tokens.
func TestCachesStayBounded(t *testing.T) {
	s := openStore(t)
	h := Handler(s, Options{PollInterval: time.Hour})
	srv := h.(*server)
	for i := range maxCachedViews + 50 {
		serve(h, "/api/session?id=nope-"+strconv.Itoa(i))
	}
	for i := range maxTokenEntries + 50 {
		srv.tokens.get(context.Background(), "poll-"+strconv.Itoa(i))
	}
	if n := srv.views.lru.Len(); n > maxCachedViews || len(srv.views.byID) != n {
		t.Fatalf("%d views kept (%d indexed), bound %d", n, len(srv.views.byID), maxCachedViews)
	}
	if n := len(srv.tokens.m); n > maxTokenEntries {
		t.Fatalf("%d tokens kept, bound %d", n, maxTokenEntries)
	}
}
