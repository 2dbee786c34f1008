package claude_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/claude"
	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

// lastChild returns the child view of the last event for a child card.
func lastChild(t *testing.T, res *adapter.ReplayResult, id string) *adapter.ChildSession {
	t.Helper()
	e := goldentest.Last(t, res, id)
	if e.Child == nil {
		t.Fatalf("%s: no child view", id)
	}
	return e.Child
}

// messages returns the last view of every (transcript, message id).
func messages(res *adapter.ReplayResult) map[string]*adapter.MessageView {
	out := map[string]*adapter.MessageView{}
	for _, e := range res.Events {
		if e.Kind == adapter.EventSessionMessage {
			out[e.Message.SessionID+"/"+e.Message.MessageID] = e.Message
		}
	}
	return out
}

// Subagent-session form over captures: the flow, the states, the
// messages, the session references, and dropping without the capability.
func TestSubagentSessionScenarios(t *testing.T) {
	t.Run("34_RFDFlowMapsOntoThePayload", func(t *testing.T) {
		res := goldentest.Replay(t, "rfd_flow", adapter.Config{})
		e := goldentest.Last(t, res, "child1")
		got := goldentest.PayloadJSON(t, e)
		want := `{"kind":"subagent_task","subagent_task":{"description":"Investigate flaky test","prompt":"Find the root cause","subagent_type":"general-purpose","status":"idle","agent_id":"child1","model":"claude-opus-4-8","child_session_id":"child1","total_tokens":15,"result_text":"VERDICT: ok"},"background_work":{"kind":"subagent","work_id":"child1","ended":true}}`
		if got != want {
			t.Errorf("payload\n got %s\nwant %s", got, want)
		}
		// Reused after end_turn, then cancelled: the view follows, the
		// card's tool status stays at its first terminal value.
		if e.Status != adapter.ToolStatusComplete || e.Child.StopReason != "cancelled" || e.Child.Live {
			t.Errorf("final: status %s child %+v", e.Status, e.Child)
		}
		if b := goldentest.Last(t, res, "toolu_B"); b.SessionID != "child1" || b.ParentSessionID != "s1" {
			t.Errorf("child traffic attributed to %q (parent %q)", b.SessionID, b.ParentSessionID)
		}
	})
	t.Run("33_DroppedAndCountedWithoutCapability", func(t *testing.T) {
		res := goldentest.Replay(t, "rfd_without_capability", adapter.Config{})
		// The child's own session_message and tool call arrive in a
		// session nobody opened or announced: foreign, not dropped.
		if got := res.Counters[adapter.CounterSubagentFramesOff]; got != 10 {
			t.Errorf("dropped %d, want 10", got)
		}
		if got := res.Counters[adapter.CounterForeignSessionUpdates]; got != 4 {
			t.Errorf("foreign %d, want 4", got)
		}
		for _, e := range res.Events {
			if e.Kind == adapter.EventSessionMessage || e.Child != nil || len(e.SessionRefs) > 0 || e.Payload != nil {
				t.Errorf("event leaked through: %+v", e)
			}
		}
	})
	t.Run("35_36_37_CapabilitiesAndStates", func(t *testing.T) {
		res := goldentest.Replay(t, "rfd_states", adapter.Config{})
		c2 := lastChild(t, res, "c2")
		if c2.State != "unknown" || c2.Live || c2.CanCancel {
			t.Errorf("c2 %+v", c2)
		}
		// unknown alone kept the grant; only the later {} revoked it.
		ev := res.Events
		if ev[1].Child.State != "unknown" || !ev[1].Child.CanCancel || ev[1].Status != adapter.ToolStatusUnknown {
			t.Errorf("unknown changed capabilities or status: %+v %s", ev[1].Child, ev[1].Status)
		}
		if c3 := lastChild(t, res, "c3"); c3.CanCancel {
			t.Error("capabilities:null kept cancel")
		}
		c4 := lastChild(t, res, "c4")
		if c4.CanCancel || c4.State != "" || c4.Title != "Renamed" || c4.AdditionalDirectories == nil || len(c4.AdditionalDirectories) != 0 {
			t.Errorf("c4 %+v", c4)
		}
		for _, e := range res.Events {
			if e.ToolCallID == "c4" && e.Child.State == "_vendor_paused" {
				if string(e.Child.StateRaw) != `{"state":"_vendor_paused","since":5}` || e.Child.Live || e.Status.Terminal() {
					t.Errorf("vendor state not kept verbatim, or read as live/terminal: %+v", e.Child)
				}
			}
		}
		// Idle without a recognised stop reason: no longer running, and
		// no outcome claimed (unknown, not terminal).
		if e := goldentest.Last(t, res, "c5"); e.Status != adapter.ToolStatusUnknown {
			t.Errorf("idle without a recognised stop reason: %s, want unknown", e.Status)
		}
		if e := goldentest.Last(t, res, "c6"); e.Status != adapter.ToolStatusError {
			t.Errorf("idle+error: %s", e.Status)
		}
		if got := res.Counters[claude.CounterBadSubagentUpdate]; got != 2 {
			t.Errorf("bad_subagent_update %d", got)
		}
	})
	t.Run("38_39_MessageViews", func(t *testing.T) {
		res := goldentest.Replay(t, "rfd_messages", adapter.Config{})
		m := messages(res)
		if v := m["s1/m1"]; v == nil || v.Direction != adapter.MessageIncoming {
			t.Errorf("m1 after sender arrived: %+v", v)
		}
		for _, e := range res.Events {
			if e.Kind == adapter.EventSessionMessage && e.Message.MessageID == "m1" && e.Message.Text == "who sent this?" {
				if e.Message.Direction != adapter.MessageUnattributed || e.Message.LinkedSessionID != "" {
					t.Errorf("sender-less message %+v", e.Message)
				}
			}
		}
		if goldentest.Last(t, res, "k1").Payload.SubagentTask.ResultText != "" {
			t.Error("a sender-less or empty message became a result")
		}
		if m["s1/same"].LinkedSessionID != "" || m["k1/same"].LinkedSessionID != "" {
			t.Error("equal message ids were linked")
		}
		if v := m["s1/out1"]; v.LinkedSessionID != "k1" || v.LinkedMessageID != "in1" || v.Text != "hello world" {
			t.Errorf("outgoing view %+v", v)
		}
		if v := m["k1/in1"]; v.LinkedSessionID != "s1" || v.LinkedMessageID != "out1" {
			t.Errorf("incoming view %+v", v)
		}
		if v := m["s1/orphan"]; v.Direction != adapter.MessageUnattributed {
			t.Errorf("orphan chunk %+v", v)
		}
	})
	t.Run("40_SessionReferences", func(t *testing.T) {
		res := goldentest.Replay(t, "rfd_session_refs", adapter.Config{})
		if refs := res.Events[1].SessionRefs; len(refs) != 1 || !refs[0].Known {
			t.Errorf("known ref %+v", refs)
		}
		if refs := res.Events[2].SessionRefs; len(refs) != 1 || refs[0].Known {
			t.Errorf("unknown ref %+v", refs)
		}
		if claudeCanCancelAfterReplay(res) {
			t.Error("a reference granted cancel")
		}
		if refs := goldentest.Last(t, res, "t_stop").SessionRefs; refs != nil {
			t.Errorf("replaced content kept refs %+v", refs)
		}
	})
}

func claudeCanCancelAfterReplay(res *adapter.ReplayResult) bool {
	for _, e := range res.Events {
		if e.Child != nil && e.Child.SessionID == "ghost" {
			return true
		}
	}
	return false
}

// Cancel is offered only while the child
// advertises it; after the parent is loaded again, replayed grants are
// historical and capabilities start empty until a current update.
func TestCancelGrantAndParentLoad(t *testing.T) {
	tr, err := adapter.NewTracker(adapter.Config{DialectName: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
	feed := func(js string) {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(js), &n); err != nil {
			t.Fatal(err)
		}
		tr.SessionUpdate(n)
	}
	announce := func(caps string) {
		feed(fmt.Sprintf(`{"sessionId":"p","update":{"sessionUpdate":"subagent_update","sessionId":"c","capabilities":%s,"state":{"state":"running"}}}`, caps))
	}
	if claude.CanCancel(tr, "c") {
		t.Fatal("unannounced child cancellable")
	}
	announce(`{"cancel":{}}`)
	if !claude.CanCancel(tr, "c") {
		t.Fatal("advertised cancel not offered")
	}
	if got := tr.ParentSession("c"); got != "p" {
		t.Fatalf("ParentSession(c) = %q", got)
	}
	tr.SessionLoaded("p")
	if claude.CanCancel(tr, "c") {
		t.Fatal("grant survived the parent load")
	}
	announce(`{"cancel":{}}`) // replayed during the load: historical
	if claude.CanCancel(tr, "c") {
		t.Fatal("historical grant revived")
	}
	tr.SessionLoadFinished("p", true)
	if claude.CanCancel(tr, "c") {
		t.Fatal("grant revived by the load response alone")
	}
	announce(`{"cancel":{}}`)
	if !claude.CanCancel(tr, "c") {
		t.Fatal("current grant after load not offered")
	}
	announce(`{}`)
	if claude.CanCancel(tr, "c") {
		t.Fatal("revoked grant still offered")
	}
	announce(`{"cancel":{}}`)
	claude.Disconnected(tr)
	if claude.CanCancel(tr, "c") {
		t.Fatal("cancel offered after the connection was lost")
	}
	// A failed load drops what was replayed during it.
	tr.SessionLoaded("p")
	announce(`{"cancel":{}}`)
	tr.SessionLoadFinished("p", false)
	tr.Do(func(tx *adapter.Tx) {
		if _, ok := tx.Card("p", "c"); ok {
			t.Error("state from a failed load kept")
		}
	})
}

// Message text is capped per view and per connection; chunks beyond the cap
// are counted, the oldest views forgotten.
func TestMessageTextBounds(t *testing.T) {
	lim := claude.Limits{MessageTextBytes: 1000, MessageBytes: 10_000}
	tr, err := adapter.NewTracker(adapter.Config{Dialect: claude.NewDialect(claude.Options{Limits: lim})})
	if err != nil {
		t.Fatal(err)
	}
	tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
	chunk := strings.Repeat("x", 256)
	feed := func(js string) {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(js), &n); err != nil {
			t.Fatal(err)
		}
		tr.SessionUpdate(n)
	}
	for range 6 { // 1536 bytes into one view
		feed(fmt.Sprintf(`{"sessionId":"p","update":{"sessionUpdate":"session_message_chunk","messageId":"m","content":{"type":"text","text":%q}}}`, chunk))
	}
	big := strings.Repeat("y", lim.MessageTextBytes)
	n := lim.MessageBytes/lim.MessageTextBytes + 4
	for i := range n {
		feed(fmt.Sprintf(`{"sessionId":"p","update":{"sessionUpdate":"session_message","messageId":"big%d","content":[{"type":"text","text":%q}]}}`, i, big))
	}
	c := tr.Counters()
	if c[claude.CounterMessageTruncated] != 3 {
		t.Errorf("truncated %d, want 3", c[claude.CounterMessageTruncated])
	}
	if c[claude.CounterMessagesEvicted] < 4 {
		t.Errorf("evicted %d views, want at least 4", c[claude.CounterMessagesEvicted])
	}
}

// A child's result is its latest agent message in its own session once it
// is idle after end_turn: a later message replaces an earlier one, a chunk
// after idle still counts, a cancelled child has none, and the text is
// bounded per answer and per connection.
func TestChildAnswerIsTheFinalMessage(t *testing.T) {
	lim := claude.Limits{MessageTextBytes: 8, MessageBytes: 12}
	var last = map[string]adapter.Event{}
	tr, err := adapter.NewTracker(adapter.Config{Dialect: claude.NewDialect(claude.Options{Limits: lim}), OnEvent: func(e adapter.Event) {
		if e.Payload != nil {
			last[e.ToolCallID] = e
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
	feed := func(js string) {
		t.Helper()
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(js), &n); err != nil {
			t.Fatal(err)
		}
		tr.SessionUpdate(n)
	}
	chunk := func(child, msg, text string) {
		feed(fmt.Sprintf(`{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","messageId":%q,"content":{"type":"text","text":%q}}}`, child, msg, text))
	}
	state := func(child, stop string) {
		feed(fmt.Sprintf(`{"sessionId":"p","update":{"sessionUpdate":"subagent_update","sessionId":%q,"state":{"state":"idle","stopReason":%q}}}`, child, stop))
	}
	result := func(child string) string { return last[child].Payload.SubagentTask.ResultText }
	for _, c := range []string{"a", "b", "c"} {
		feed(fmt.Sprintf(`{"sessionId":"p","update":{"sessionUpdate":"subagent_update","sessionId":%q,"state":{"state":"running"}}}`, c))
	}
	chunk("a", "m1", "look")
	if result("a") != "" {
		t.Errorf("a running child has result %q", result("a"))
	}
	chunk("a", "m2", "AN")
	state("a", "end_turn")
	chunk("a", "m2", "SWER-ALPHA") // after idle, and beyond the 8-byte cap
	if got := result("a"); got != "ANSWER-A" {
		t.Errorf("a result %q, want the final message cut at 8 bytes", got)
	}
	chunk("b", "m1", "pa")
	state("b", "cancelled")
	if got := result("b"); got != "" {
		t.Errorf("cancelled child has result %q", got)
	}
	chunk("c", "m1", "ANSWER-C") // only 2 bytes left of the connection's 12
	state("c", "end_turn")
	if got := result("c"); got != "AN" {
		t.Errorf("c result %q, want the 2 bytes the budget left", got)
	}
	if n := tr.Counters()[claude.CounterMessageTruncated]; n != 2 {
		t.Errorf("truncated %d, want 2", n)
	}
	// An unknown session's chunks are the parent's own text, not an answer.
	chunk("p", "m9", "parent text")
	if _, ok := last["p"]; ok {
		t.Error("the parent's text made a card")
	}
}
