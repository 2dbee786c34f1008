package view

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

// golden compares got with testdata/<name> (rewritten under -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Compare(t, filepath.Join("testdata", name), got)
}

func intp(n int) *int { return &n }

func sub(kind adapter.EventKind, id, parent string, status adapter.ToolStatus, task adapter.SubagentTask) adapter.Event {
	return adapter.Event{
		Kind: kind, SessionID: "s1", ToolCallID: id, ParentToolCallID: parent, Title: "Task", Status: status,
		Payload: &adapter.Payload{Kind: adapter.PayloadKindSubagentTask, SubagentTask: &task},
	}
}

// events is a turn with a foreground subagent with nested tool calls and a
// result, a background one, and a bare Cursor-like one.
func events() []adapter.Event {
	return []adapter.Event{
		sub(adapter.EventToolCall, "toolu_A", "", adapter.ToolStatusPending, adapter.SubagentTask{}),
		sub(adapter.EventToolUpdate, "toolu_A", "", adapter.ToolStatusUnchanged, adapter.SubagentTask{Description: "Investigate flaky test", Prompt: "Find the root cause", SubagentType: "general-purpose"}),
		{Kind: adapter.EventToolCall, SessionID: "s1", ToolCallID: "toolu_B", ParentToolCallID: "toolu_A", Title: "Read retry_test.go", Status: adapter.ToolStatusPending},
		{Kind: adapter.EventToolUpdate, SessionID: "s1", ToolCallID: "toolu_B", ParentToolCallID: "toolu_A", Title: "Read retry_test.go", Status: adapter.ToolStatusComplete},
		sub(adapter.EventToolCall, "toolu_C", "", adapter.ToolStatusInProgress, adapter.SubagentTask{Description: "Audit the docs", SubagentType: "docs-auditor", Prompt: "Check every README link"}),
		sub(adapter.EventToolUpdate, "toolu_C", "", adapter.ToolStatusComplete, adapter.SubagentTask{Description: "Audit the docs", SubagentType: "docs-auditor", Prompt: "Check every README link", Status: "async_launched", AgentID: "b7c8", IsAsync: true}),
		{Kind: adapter.EventSessionMessage, SessionID: "s1", Message: &adapter.MessageView{SessionID: "s1", Direction: adapter.MessageUnattributed, Text: "hello\nthere"}},
		sub(adapter.EventToolUpdate, "toolu_A", "", adapter.ToolStatusComplete, adapter.SubagentTask{Description: "Investigate flaky test", Prompt: "Find the root cause", SubagentType: "general-purpose", Status: "completed", Model: "claude-opus-4-8", DurationMs: 12345, TotalTokens: 6789, ToolUseCount: intp(11), ResultText: "VERDICT: ok\nsecond line"}),
		sub(adapter.EventToolCall, "tool_x", "", adapter.ToolStatusComplete, adapter.SubagentTask{Model: "composer-2.5-fast", DurationMs: 41235, IsAsync: true, ToolUseCount: intp(0), ChildSessionID: "ses_0123456789abcdef"}),
	}
}

func TestTerminalPlainGolden(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf, false)
	term.AgentText("s1", "I'll fan ")
	term.AgentText("s1", "this out.\nFirst")
	for _, ev := range events() {
		term.Event(ev)
	}
	term.AgentText("s1", " line pending")
	term.Tick() // no animation: writes nothing
	term.Summary()
	if strings.ContainsAny(buf.String(), "\r\033") {
		t.Fatal("plain output contains control characters")
	}
	golden(t, "plain.golden", buf.Bytes())
}

func TestTerminalAnimatedShowsProgress(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf, true)
	evs := events()
	term.Event(evs[0])
	term.Tick()
	if !strings.Contains(buf.String(), "1 subagent running") {
		t.Fatalf("no progress line: %q", buf.String())
	}
	for _, ev := range evs[1:] {
		term.Event(ev)
	}
	term.Flush()
	if out := buf.String(); !strings.HasSuffix(out, "\n") && !strings.HasSuffix(out, "\r\033[K") {
		t.Fatalf("progress line left on screen at the end: %q", out)
	}
}

func TestWriteJSONGolden(t *testing.T) {
	b := NewBoard()
	for _, ev := range events() {
		b.Apply(ev)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, b, "claude"); err != nil {
		t.Fatal(err)
	}
	golden(t, "cards.jsonl.golden", buf.Bytes())
}

func TestChips(t *testing.T) {
	c := &Card{Event: sub(adapter.EventToolCall, "x", "", adapter.ToolStatusComplete, adapter.SubagentTask{ToolUseCount: intp(2), DurationMs: 61000, TotalTokens: 1234567})}
	if got := strings.Join(Chips(c, 2), "|"); got != "1m01s|1,234,567 tokens" {
		t.Fatalf("chips = %q (a tool count equal to the rendered children is not repeated)", got)
	}
	if got := strings.Join(Chips(c, 0), "|"); got != "1m01s|1,234,567 tokens|2 tools" {
		t.Fatalf("chips = %q", got)
	}
	if got := formatDuration(850); got != "850ms" {
		t.Fatal(got)
	}
}

// TestAgentControlCharactersNeverReachTheTerminal pins that escape
// sequences and other control characters an agent puts into its text, a
// title or a payload are replaced before they are written, in the log and in
// the summary, and that a line without an end is shown in bounded pieces.
func TestAgentControlCharactersNeverReachTheTerminal(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf, false)
	term.AgentText("s1", "red \x1b[31mtext\x07\tend\n")
	term.Event(adapter.Event{Kind: adapter.EventToolCall, SessionID: "s1", ToolCallID: "t1", Title: "ls \x1b]0;pwned\x07", Status: adapter.ToolStatusPending})
	term.Event(sub(adapter.EventToolCall, "t2", "", adapter.ToolStatusComplete, adapter.SubagentTask{Description: "d\x1b[2J", ResultText: "r\x9b1m"}))
	term.AgentText("s1", strings.Repeat("x", maxPendingText+10))
	term.Summary()
	out := buf.String()
	if strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && safetext.Forbidden(r) }) {
		t.Fatalf("control characters reached the output:\n%q", out)
	}
	if !strings.Contains(out, "agent: red �[31mtext� end\n") {
		t.Fatalf("agent text not shown with replacements:\n%q", out)
	}
	if !strings.Contains(out, "agent: "+strings.Repeat("x", maxPendingText+10)+"\n") {
		t.Fatalf("an over-long line was not shown in full")
	}
}

// TestBoardKeepsSubagentsAndBoundsToolCalls pins that a turn with more tool
// calls than MaxToolCards keeps every subagent card and only the latest
// MaxToolCards other tool calls.
func TestBoardKeepsSubagentsAndBoundsToolCalls(t *testing.T) {
	b := NewBoard()
	b.Apply(sub(adapter.EventToolCall, "first-subagent", "", adapter.ToolStatusInProgress, adapter.SubagentTask{}))
	for i := range MaxToolCards + 50 {
		b.Apply(adapter.Event{Kind: adapter.EventToolCall, SessionID: "s1", ToolCallID: fmt.Sprintf("tool-%d", i), Status: adapter.ToolStatusPending})
	}
	b.Apply(sub(adapter.EventToolCall, "last-subagent", "", adapter.ToolStatusInProgress, adapter.SubagentTask{}))
	if got := len(b.Subagents()); got != 2 {
		t.Fatalf("%d subagent cards, want 2", got)
	}
	cards := b.Cards()
	if got := len(cards); got != MaxToolCards+2 {
		t.Fatalf("%d cards, want %d", got, MaxToolCards+2)
	}
	if cards[1].Event.ToolCallID != "tool-50" {
		t.Fatalf("oldest kept tool call is %s, want tool-50", cards[1].Event.ToolCallID)
	}
}

// An agent that sends subagents with huge fields cannot make the board
// grow without bound: the oldest finished cards go first, running ones and
// the latest card stay, and the summary says cards were dropped.
func TestBoardBoundsItsBytes(t *testing.T) {
	b := NewBoard()
	big := strings.Repeat("x", 1<<20)
	b.Apply(sub(adapter.EventToolCall, "running", "", adapter.ToolStatusInProgress, adapter.SubagentTask{Prompt: big}))
	n := MaxBoardBytes/(1<<20) + 20
	for i := range n {
		b.Apply(sub(adapter.EventToolCall, fmt.Sprintf("done-%d", i), "", adapter.ToolStatusComplete, adapter.SubagentTask{Prompt: big}))
	}
	if b.bytes > MaxBoardBytes {
		t.Fatalf("board holds %d bytes, bound %d", b.bytes, MaxBoardBytes)
	}
	total := 0
	for _, c := range b.Cards() {
		total += c.Event.Size()
	}
	if total != b.bytes {
		t.Fatalf("accounted %d bytes, cards hold %d", b.bytes, total)
	}
	cards := b.Cards()
	if cards[0].Event.ToolCallID != "running" || cards[len(cards)-1].Event.ToolCallID != fmt.Sprintf("done-%d", n-1) {
		t.Fatalf("kept %s … %s: want the running card and the latest", cards[0].Event.ToolCallID, cards[len(cards)-1].Event.ToolCallID)
	}
	if b.Forgotten != n+1-len(cards) {
		t.Fatalf("Forgotten = %d, want %d", b.Forgotten, n+1-len(cards))
	}
	var out bytes.Buffer
	WriteCards(&out, b)
	if !strings.Contains(out.String(), "dropped to bound memory") {
		t.Fatalf("summary does not say cards were dropped:\n%.300s", out.String())
	}
}

// Agent text for many sessions, none ending its line, is shown early rather
// than held: at most maxPendingSessions sessions hold text at once.
func TestTerminalBoundsPendingTextSessions(t *testing.T) {
	var out bytes.Buffer
	term := NewTerminal(&out, false)
	for i := range 10 * maxPendingSessions {
		term.AgentText(fmt.Sprintf("s%d", i), "partial")
		if len(term.text) > maxPendingSessions {
			t.Fatalf("%d sessions hold text", len(term.text))
		}
	}
	term.Flush()
	if got := strings.Count(out.String(), "agent: partial"); got != 10*maxPendingSessions {
		t.Fatalf("%d text lines shown, want %d", got, 10*maxPendingSessions)
	}
}

// TestChildNotConfirmedLiveIsNotShownRunning pins the rule that only a
// confirmed running or requires_action state is live: after unknown (or an
// unrecognised state) a child session is neither shown as running nor
// counted by the progress line; a last-known running after a reload is
// marked not live.
func TestChildNotConfirmedLiveIsNotShownRunning(t *testing.T) {
	child := func(state string, live bool) adapter.Event {
		e := sub(adapter.EventToolUpdate, "c1", "", adapter.ToolStatusInProgress, adapter.SubagentTask{ChildSessionID: "c1", Status: state})
		e.Child = &adapter.ChildSession{SessionID: "c1", ParentSessionID: "s1", State: state, Live: live}
		return e
	}
	for _, tc := range []struct {
		state   string
		live    bool
		want    string
		running int
	}{
		{"running", true, "in_progress", 1},
		{"unknown", false, "unknown", 0},
		{"_vendor_paused", false, "_vendor_paused", 0},
		{"running", false, "running, not live", 0},
	} {
		var buf bytes.Buffer
		term := NewTerminal(&buf, false)
		term.Event(child(tc.state, tc.live))
		if !strings.Contains(buf.String(), "["+tc.want+"]") {
			t.Errorf("%s live=%t: shown %q, want [%s]", tc.state, tc.live, buf.String(), tc.want)
		}
		if got := term.Board().Running(); got != tc.running {
			t.Errorf("%s live=%t: running %d, want %d", tc.state, tc.live, got, tc.running)
		}
	}
}

// Text a child session (a subagent) writes is shown as the child's, under
// its card's header, never as "agent: …", which is the parent's voice. A
// child known only from a tool call of its own is labelled by its id.
func TestChildSessionTextIsLabelledAsTheChilds(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf, false)
	card := sub(adapter.EventToolCall, "child1", "", adapter.ToolStatusInProgress, adapter.SubagentTask{Description: "Investigate", SubagentType: "general-purpose", ChildSessionID: "child1"})
	card.Child = &adapter.ChildSession{SessionID: "child1", ParentSessionID: "s1", Live: true}
	term.Event(card)
	term.Event(adapter.Event{Kind: adapter.EventToolCall, SessionID: "child2", ParentSessionID: "s1", ToolCallID: "t9", Title: "Read", Status: adapter.ToolStatusPending})
	term.AgentText("s1", "parent speaks\n")
	term.AgentText("child1", "child speaks\n")
	term.AgentText("child2", "other child\n")
	term.Flush()
	out := buf.String()
	for _, want := range []string{"agent: parent speaks\n", "↳ general-purpose — Investigate: child speaks\n", "↳ session child2: other child\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "agent: child") || strings.Contains(out, "agent: other") {
		t.Fatalf("child text shown as the agent's:\n%s", out)
	}
}
