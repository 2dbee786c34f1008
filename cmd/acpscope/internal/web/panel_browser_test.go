package web

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// seedLongAndShortTurns stores session S with a turn of 1 ms, a turn of
// 1 hour and a third turn whose child still runs (observed 566 ms before
// its last update), every agent text from the XSS corpus.
func seedLongAndShortTurns(t *testing.T, s *persistence.Store) {
	ex := ExecutionID("claude", "r")
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	card := func(call, turn string, start, end time.Duration, status, text string) {
		upsert(t, s, persistence.Frame{TaskSessionID: "S", ToolCallID: call, ExecutionID: ex, TurnID: turn,
			ChildSessionID: "child-" + call, Description: text, SubagentType: text, ToolStatus: "in_progress", ObservedAt: at(start)})
		upsert(t, s, persistence.Frame{TaskSessionID: "S", ToolCallID: call, ExecutionID: ex, TurnID: turn,
			ToolStatus: status, ObservedAt: at(end)})
	}
	card("short", "turn-1", 0, time.Millisecond, "completed", xssCorpus[0])
	card("long", "turn-2", time.Millisecond, time.Hour, "completed", xssCorpus[1])
	for i, p := range xssCorpus[2:] {
		card(fmt.Sprintf("run-%d", i), "turn-3", time.Hour+time.Millisecond, time.Hour+566*time.Millisecond, "in_progress", p)
	}
}

// The status panel and the timeline at several widths and zooms: no
// turn label or panel label is clipped or overlaps another, the running
// bars reach the server's present (12 s past the last update) and the
// corpus runs nowhere.
func TestBrowserStatusPanelLayout(t *testing.T) {
	b := webtest.OpenBrowser(t)
	s := openStore(t)
	seedLongAndShortTurns(t, s)
	now := t0.Add(time.Hour + 12*time.Second)
	log, can := hostileActivity(len(xssCorpus) - 2)
	srv := httptest.NewServer(Handler(s, Options{Now: func() time.Time { return now }, PollInterval: time.Hour,
		Traffic: log, Stop: &fakeStopper{can: can}}))
	t.Cleanup(srv.Close)
	page := srv.URL + "/session?id=" + url.QueryEscape("S")
	type zoom struct {
		scale float64
		css   string
	}
	for _, width := range []int{360, 1024, 1920} {
		for _, z := range []zoom{{0.5, ""}, {1, ""}, {2, ""}, {1, "0.5"}, {1, "2"}} {
			name := fmt.Sprintf("%dpx scale %v zoom %q", width, z.scale, z.css)
			b.Open(page, width, 900, z.scale)
			if z.css != "" {
				b.Eval(`document.documentElement.style.zoom = "`+z.css+`"; window.dispatchEvent(new Event("resize")); true`, nil)
			}
			b.WaitFor(`document.body.dataset.live === "read"`)
			var problems []string
			b.Eval(layoutProblems, &problems)
			for _, p := range problems {
				t.Errorf("%s: %s", name, p)
			}
			var got struct {
				Labels, Running int
				Stops, Calls    int
				Perms           int
				Axis            string
				BarReach        float64
				XSS             string
				Injected        string
			}
			b.Eval(`(function () {
				var tl = document.getElementById("timeline").getBoundingClientRect();
				var reach = 0;
				document.querySelectorAll("#timeline .bar.open").forEach(function (b) {
					reach = Math.max(reach, (b.getBoundingClientRect().right - tl.left) / tl.width);
				});
				return { Stops: document.querySelectorAll("#running button.stop").length,
					Calls: document.querySelectorAll("#running .call").length,
					Perms: document.querySelectorAll("#running .perm").length,
					Labels: document.querySelectorAll("#turn-labels .turn-label:not([hidden])").length,
					Running: document.querySelectorAll("#running li.run-card").length,
					Axis: document.querySelector("#axis .end").textContent, BarReach: reach,
					XSS: document.body.dataset.xss || "", Injected: document.body.dataset.injected };
			})()`, &got)
			n := len(xssCorpus) - 2
			if got.Labels < 2 || got.Running != n || got.XSS != "" || got.Injected != "0" || got.Stops != n/2 || got.Calls != n || got.Perms != n {
				t.Errorf("%s: %+v", name, got)
			}
			// The present is at least 1 h 12 s after the origin (the page's
			// clock, set by the server's, goes on while the test runs): the
			// axis says so and the running bars reach its end (not the
			// 566 ms of the store).
			var minutes, seconds int
			if _, err := fmt.Sscanf(got.Axis, "%d min %d s", &minutes, &seconds); err != nil || minutes*60+seconds < 3612 || got.BarReach < 0.99 {
				t.Errorf("%s: axis %q, running bars reach %.3f of the timeline", name, got.Axis, got.BarReach)
			}
		}
	}
}

// hostileActivity is a traffic log in which each of n running children
// (child-run-0…) said a corpus text as its message, a tool call's title
// and a pending permission's title, and the children that hold the
// cancel capability (every other one).
func hostileActivity(n int) (*traffic.Log, map[string]bool) {
	log := traffic.New(traffic.Options{})
	can := map[string]bool{}
	for i := range n {
		child := fmt.Sprintf("child-run-%d", i)
		p, _ := json.Marshal(xssCorpus[2+i] + strings.Repeat(" long", i*20))
		for _, m := range []string{
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + child + `","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":` + string(p) + `}}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + child + `","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":` + string(p) + `,"status":"in_progress"}}}`,
			`{"jsonrpc":"2.0","id":` + fmt.Sprint(i) + `,"method":"session/request_permission","params":{"sessionId":"` + child + `","toolCall":{"toolCallId":"t","title":` + string(p) + `}}}`,
		} {
			log.Add(capture.FromAgent, []byte(m), t0)
		}
		can[child] = i%2 == 0
	}
	return log, can
}

// layoutProblems lists, in the page, every turn label outside its strip
// or overlapping another, every panel label or value whose text is cut
// (scrolled or clipped horizontally) or that overlaps a sibling, and the
// axis labels overlapping.
const layoutProblems = `(function () {
	var out = [];
	function r(e) { return e.getBoundingClientRect(); }
	function overlap(a, b) { return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5; }
	function inside(a, b) { return a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5; }
	var strip = document.getElementById("turn-labels");
	var labels = Array.prototype.filter.call(strip.querySelectorAll(".turn-label"), function (l) { return !l.hidden; });
	labels.forEach(function (l, i) {
		if (!inside(r(l), r(strip))) out.push("turn label " + l.textContent + " outside its strip: " + JSON.stringify(r(l)) + " in " + JSON.stringify(r(strip)));
		if (l.scrollWidth > l.clientWidth + 1) out.push("turn label " + l.textContent + " cut");
		for (var j = i + 1; j < labels.length; j++) if (overlap(r(l), r(labels[j]))) out.push(l.textContent + " overlaps " + labels[j].textContent);
	});
	var axis = document.querySelectorAll("#axis span");
	if (axis.length === 2 && overlap(r(axis[0]), r(axis[1]))) out.push("axis labels overlap");
	document.querySelectorAll("#running li.run-card").forEach(function (card) {
		var box = r(card);
		var parts = card.querySelectorAll(".run-label, dt, dd, .call-title, .perm, button.stop");
		parts.forEach(function (p) {
			if (p.scrollWidth > p.clientWidth + 1 && getComputedStyle(p).overflowX !== "auto") out.push("panel text cut: " + p.textContent.slice(0, 40));
			if (!inside(r(p), box)) out.push("panel text outside its card: " + p.textContent.slice(0, 40));
		});
		var facts = card.querySelectorAll(".fact");
		for (var i = 0; i < facts.length; i++) for (var j = i + 1; j < facts.length; j++)
			if (overlap(r(facts[i]), r(facts[j]))) out.push("panel rows overlap: " + facts[i].textContent.slice(0, 30));
		facts.forEach(function (f) {
			var dt = f.querySelector("dt"), dd = f.querySelector("dd");
			if (dt && dd && overlap(r(dt), r(dd))) out.push("panel label overlaps its value: " + dt.textContent);
		});
	});
	return out;
})()`

// Clicking Stop on a child that holds the cancel capability sends one
// stop for that child, through the page's token and Origin; the page says
// so, and the server's refusals reach the page as refusals.
func TestBrowserStopClick(t *testing.T) {
	b := webtest.OpenBrowser(t)
	s := openStore(t)
	seedRunningChildren(t, s)
	// A hostile child session id, granted too: its button stops exactly it.
	hostile := xssCorpus[1] + "\u202e"
	upsert(t, s, persistence.Frame{TaskSessionID: "P", ToolCallID: "call-hostile", ExecutionID: ExecutionID("claude", "r"),
		ChildSessionID: hostile, Description: xssCorpus[0], ToolStatus: "in_progress", ObservedAt: t0.Add(5 * time.Second)})
	st := &fakeStopper{can: map[string]bool{"granted": true, hostile: true}}
	srv := httptest.NewServer(Handler(s, Options{Stop: st, PollInterval: time.Hour}))
	t.Cleanup(srv.Close)
	b.Open(srv.URL+"/session?id=P", 1024, 800, 1)
	b.WaitFor(`document.body.dataset.live === "read"`)
	var buttons []string
	b.Eval(`Array.prototype.map.call(document.querySelectorAll("#running button.stop"), function (b) { return b.dataset.child; })`, &buttons)
	if len(buttons) != 2 || buttons[0] != "granted" || buttons[1] != hostile {
		t.Fatalf("Stop buttons for %q, want granted and the hostile child only", buttons)
	}
	b.Eval(`document.querySelectorAll("#running button.stop")[1].click(); true`, nil)
	b.WaitFor(`document.body.dataset.stop === "202"`)
	b.Eval(`document.body.dataset.stop = ""; document.querySelector("#running button.stop").click(); true`, nil)
	b.WaitFor(`document.body.dataset.stop === "202"`)
	st.mu.Lock()
	stopped := append([]string(nil), st.stopped...)
	st.mu.Unlock()
	if len(stopped) != 2 || stopped[0] != hostile || stopped[1] != "granted" {
		t.Fatalf("stopped %q", stopped)
	}
	var xss, injected string
	b.Eval(`document.body.dataset.xss || ""`, &xss)
	b.Eval(`String(document.querySelectorAll("main script, main img, main svg, main iframe").length)`, &injected)
	if xss != "" || injected != "0" {
		t.Errorf("the corpus ran: xss %q, %s injected elements", xss, injected)
	}
	// The capability is gone (the child finished): the server refuses,
	// and the page shows the refusal on the button.
	st.mu.Lock()
	st.can["granted"] = false
	st.mu.Unlock()
	b.Eval(`document.body.dataset.stop = ""; var s = document.querySelector("#running button.stop"); s.disabled = false; s.click(); true`, nil)
	b.WaitFor(`document.body.dataset.stop === "409"`)
	// A forged request from the page's script without the token is
	// refused too.
	var status int
	b.Eval(`fetch("/api/stop", {method: "POST", body: new URLSearchParams({session: "P", child: "granted"})}).then(function (r) { return r.status; })`, &status)
	if status != 403 {
		t.Errorf("a stop without the token: %d, want 403", status)
	}
}
