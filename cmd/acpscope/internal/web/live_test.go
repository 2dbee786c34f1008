package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// A running child's bar must grow with the clock, not end at the store's
// last update: the page carries the server's time (the page data and a
// header on every answer) so that the script corrects its own clock, and
// each card its last activity.
func TestSessionCarriesServerTimeAndLastActivity(t *testing.T) {
	s := openStore(t)
	upsert(t, s, persistence.Frame{TaskSessionID: "S", ToolCallID: "run", ExecutionID: ExecutionID("claude", "r"),
		ToolStatus: "in_progress", ObservedAt: t0})
	upsert(t, s, persistence.Frame{TaskSessionID: "S", ToolCallID: "run", ExecutionID: ExecutionID("claude", "r"),
		ToolStatus: "in_progress", ObservedAt: t0.Add(566 * time.Millisecond)})
	now := t0.Add(12 * time.Second)
	h := Handler(s, Options{Now: func() time.Time { return now }})

	res := get(t, h, "/session?id=S")
	m := dataBlock.FindStringSubmatch(bodyOf(t, res))
	if m == nil {
		t.Fatal("no data block")
	}
	var d sessionData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatal(err)
	}
	if d.Now != now.UnixMilli() {
		t.Errorf("page data now_ms = %d, want %d", d.Now, now.UnixMilli())
	}
	if len(d.View.Cards) != 1 || !d.View.Cards[0].Updated.Equal(t0.Add(566*time.Millisecond)) {
		t.Errorf("card last activity = %+v, want %v", d.View.Cards, t0.Add(566*time.Millisecond))
	}
	for _, target := range []string{"/api/changes?id=S", "/api/session?id=S", "/"} {
		if got := get(t, h, target).Header.Get(ServerTimeHeader); got != strconv.FormatInt(now.UnixMilli(), 10) {
			t.Errorf("%s: %s = %q, want %d", target, ServerTimeHeader, got, now.UnixMilli())
		}
	}
	if res := get(t, h, "/api/changes"); res.StatusCode != http.StatusOK {
		t.Fatal(res.Status)
	}
}
