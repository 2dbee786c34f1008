package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/internal/pgtest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// engines runs f on a fresh store of each engine, opened with opts:
// SQLite in a temporary directory, PostgreSQL on a fresh schema of
// ACP_TEST_POSTGRES_DSN (skipped when unset or unreachable, failed under
// CI=true), as the persistence suite does.
func engines(t *testing.T, f func(t *testing.T, s *persistence.Store), opts ...persistence.Option) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		f(t, openStoreWith(t, opts...))
	})
	t.Run("postgres", func(t *testing.T) {
		s, err := persistence.Open(context.Background(), postgresSchema(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// postgresSchema is a DSN on a fresh schema of the test server, dropped
// when the test ends.
func postgresSchema(t *testing.T) string {
	t.Helper()
	return pgtest.SchemaDSN(t, "acpscope_web_test")
}

// hostileFact and hostileFactShown: webtest's hostile fact and how the
// pages show it.
const (
	hostileFact      = webtest.HostileFact
	hostileFactShown = webtest.HostileFactShown
)

func seedTruths(t *testing.T, s *persistence.Store) {
	t.Helper()
	webtest.SeedCardTruths(t, s, ExecutionID("claude", "r"))
}

// cardsByCall indexes a view's cards by tool call id.
func cardsByCall(v SessionView) map[string]Card {
	out := map[string]Card{}
	for _, c := range v.Cards {
		out[c.ToolCallID] = c
	}
	return out
}

// The session page's data carries every fact the store has about a card:
// the failure's reason (sanitised), that earlier answers exist, the unknown
// status as its own, and the parent card of a card in a child session, on
// both engines; the pages stay free of injected markup and bidi overrides.
func TestSessionViewShowsCardFacts(t *testing.T) {
	engines(t, func(t *testing.T, s *persistence.Store) {
		seedTruths(t, s)
		h := Handler(s, Options{})
		var d sessionData
		if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/session?id=S"))), &d); err != nil {
			t.Fatal(err)
		}
		cards := cardsByCall(d.View)
		if c := cards["failing"]; c.Status != "error" || c.ErrorMessage != hostileFactShown || c.ErrorTruncated {
			t.Errorf("failing: status %q reason %q", c.Status, c.ErrorMessage)
		}
		if c := cards["again"]; !c.HasEarlierResults || c.ErrorMessage != "" {
			t.Errorf("again: %+v", c)
		}
		lost, late := cards["lost"], cards["late"]
		if !slices.Equal(lost.ReferencedBy, []string{"t_stop", webtest.HostileReferrerShown}) {
			t.Errorf("lost: referenced by %q", lost.ReferencedBy)
		}
		if lost.Status != "unknown" || lost.Settled != nil || lost.ToolStatus != "unknown" {
			t.Errorf("lost: status %q tool status %q settled %v", lost.Status, lost.ToolStatus, lost.Settled)
		}
		// Not running: its bar ends at its last update, not with the
		// session's latest update as an open card's does.
		if lost.End != 4000 || late.Status != "open" || late.End != d.View.Span {
			t.Errorf("bars: lost ends %d, late (%s) ends %d of %d", lost.End, late.Status, late.End, d.View.Span)
		}
		nested := cards["nested"]
		if nested.ParentSessionID != "S" || nested.Parent < 0 || d.View.Cards[nested.Parent].ToolCallID != "again" ||
			nested.Depth != 1 {
			t.Errorf("nested: parent %d (%s) depth %d", nested.Parent, nested.ParentSessionID, nested.Depth)
		}
		for _, target := range []string{"/session?id=S", "/api/session?id=S", "/api/card?session=S&execution=" +
			url.QueryEscape(ExecutionID("claude", "r")) + "&call=again"} {
			body := bodyOf(t, get(t, h, target))
			if !strings.HasPrefix(target, "/api/") {
				checkMarkup(t, target, body)
			}
			if strings.ContainsAny(body, "\u202e\x1b") {
				t.Errorf("%s: a bidi override or control character reached the page", target)
			}
			if strings.HasPrefix(target, "/api/") && strings.ContainsAny(body, "<>") {
				t.Errorf("%s: raw markup characters in the JSON", target)
			}
		}
	}, persistence.WithSubagentText(), persistence.WithCardFacts())
}

// /api/card serves a card's whole failure reason and its earlier answers
// (oldest first), sanitised, on both engines; a store that keeps no facts
// says so.
func TestCardFactsOnDemand(t *testing.T) {
	engines(t, func(t *testing.T, s *persistence.Store) {
		seedTruths(t, s)
		h := Handler(s, Options{})
		card := func(call string) CardTexts {
			t.Helper()
			var c CardTexts
			if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, cardURL(Card{SessionID: "S",
				Execution: ExecutionID("claude", "r"), ToolCallID: call})))), &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
		if f := card("failing").Facts; !f.Stored || str(f.ErrorMessage) != hostileFactShown || f.EarlierCount != 0 ||
			len(f.EarlierResults) != 0 {
			t.Errorf("failing: %+v", f)
		}
		again := card("again")
		if f := again.Facts; !f.Stored || f.ErrorMessage != nil || f.EarlierCount != 2 || f.EarlierTruncated ||
			len(f.EarlierResults) != 2 || f.EarlierResults[0] != "first answer" || f.EarlierResults[1] != hostileFactShown {
			t.Errorf("again: %+v", f)
		}
		if str(again.ResultText) != "third answer" {
			t.Errorf("again: result %q", str(again.ResultText))
		}
		if f := card("lost").Facts; !slices.Equal(f.ReferencedBy, []string{"t_stop", webtest.HostileReferrerShown}) {
			t.Errorf("lost: referenced by %q", f.ReferencedBy)
		}
	}, persistence.WithSubagentText(), persistence.WithCardFacts())

	plain := openStoreWith(t, persistence.WithSubagentText())
	upsert(t, plain, persistence.Frame{TaskSessionID: "S", ToolCallID: "a", ExecutionID: ExecutionID("claude", "r"),
		ToolStatus: "failed", Facts: &persistence.CardFacts{ErrorMessage: "dropped"}, ObservedAt: t0})
	h := Handler(plain, Options{})
	var c CardTexts
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, cardURL(Card{SessionID: "S", Execution: ExecutionID("claude", "r"),
		ToolCallID: "a"})))), &c); err != nil {
		t.Fatal(err)
	}
	if c.Facts.Stored || c.Facts.ErrorMessage != nil || !c.Stored {
		t.Errorf("a store without facts: %+v", c)
	}
	var d sessionData
	if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/session?id=S"))), &d); err != nil || len(d.View.Cards) != 1 ||
		d.View.Cards[0].Status != "error" {
		t.Errorf("the session page of a store without facts: %v %+v", err, d.View.Cards)
	}
}

// The earlier answers /api/card serves are bounded as one stored text is:
// the latest MaxEarlierResults, together at most MaxSubagentText bytes
// (the oldest served cut at a character boundary), the count kept.
func TestEarlierResultsAreBounded(t *testing.T) {
	many := make([]string, MaxEarlierResults+50)
	for i := range many {
		many[i] = fmt.Sprintf("answer %d", i)
	}
	f := factTexts(persistence.CardFacts{EarlierResults: many})
	if f.EarlierCount != len(many) || len(f.EarlierResults) != MaxEarlierResults || f.EarlierTruncated ||
		f.EarlierResults[0] != "answer 50" || f.EarlierResults[MaxEarlierResults-1] != many[len(many)-1] {
		t.Errorf("many: %d of %d, first %q", len(f.EarlierResults), f.EarlierCount, f.EarlierResults[0])
	}
	big := strings.Repeat("é", persistence.MaxSubagentText*3/10) // 60% of the bound each
	f = factTexts(persistence.CardFacts{EarlierResults: []string{"oldest", big, big + "!"}})
	total := 0
	for _, r := range f.EarlierResults {
		total += len(r)
	}
	if f.EarlierCount != 3 || len(f.EarlierResults) != 2 || !f.EarlierTruncated || total > persistence.MaxSubagentText ||
		total < persistence.MaxSubagentText-1 ||
		f.EarlierResults[1] != big+"!" || !strings.HasPrefix(big, f.EarlierResults[0]) {
		t.Errorf("big: %d of %d served, %d bytes, truncated %v", len(f.EarlierResults), f.EarlierCount, total, f.EarlierTruncated)
	}
	if f := factTexts(persistence.CardFacts{}); f.EarlierResults == nil || f.EarlierCount != 0 || f.ErrorMessage != nil {
		t.Errorf("none: %+v", f)
	}
}

// A card's own text (description, type, model, agent status, prompt and
// answer) is agent text like its facts: no control character or bidi
// override of it reaches the session page, its JSON or /api/card, on both
// engines; the text around them is kept.
func TestCardTextsReachThePagesSanitised(t *testing.T) {
	engines(t, func(t *testing.T, s *persistence.Store) {
		ctx := context.Background()
		if err := s.EnsureSession(ctx, "S", "S"); err != nil {
			t.Fatal(err)
		}
		exec := ExecutionID("claude", "r")
		const hostile = "evil\u202etxt.exe\x1b[31m"
		if err := s.Upsert(ctx, persistence.Frame{TaskSessionID: "S", TaskID: "S", ToolCallID: "c1", ExecutionID: exec,
			Description: "desc " + hostile, SubagentType: "type " + hostile, Model: "model " + hostile, Status: "status " + hostile,
			Prompt: "prompt " + hostile + "\nline two", ResultText: "answer " + hostile, ToolStatus: "completed",
			ObservedAt: time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		h := Handler(s, Options{})
		for _, target := range []string{"/session?id=S", "/api/session?id=S",
			"/api/card?session=S&execution=" + url.QueryEscape(exec) + "&call=c1"} {
			body := bodyOf(t, get(t, h, target))
			if strings.ContainsAny(body, "\u202e\x1b") {
				t.Errorf("%s: a bidi override or control character reached the page", target)
			}
			if !strings.Contains(body, "evil") || !strings.Contains(body, "txt.exe") {
				t.Errorf("%s: the text around them is lost", target)
			}
		}
		var texts CardTexts
		if err := json.Unmarshal([]byte(bodyOf(t, get(t, h, "/api/card?session=S&execution="+url.QueryEscape(exec)+"&call=c1"))), &texts); err != nil {
			t.Fatal(err)
		}
		if texts.Prompt == nil || !strings.Contains(*texts.Prompt, "\nline two") {
			t.Errorf("the prompt's line break is lost: %v", texts.Prompt)
		}
	}, persistence.WithSubagentText(), persistence.WithCardFacts())
}
