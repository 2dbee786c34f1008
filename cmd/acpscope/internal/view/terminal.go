package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
)

// spinnerFrames animate the progress line while subagents run.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Terminal renders a turn as it happens: agent text, tool calls and
// subagent cards as log lines, and, when animated, a progress line under
// them while subagents run. Without animation (output is not a terminal) it
// writes plain lines only, with no control characters. It is safe for
// concurrent use.
type Terminal struct {
	mu       sync.Mutex
	w        io.Writer
	animate  bool
	board    *Board
	text     map[string]*strings.Builder // pending agent text per session
	textMsg  map[string]string           // the message id of each session's latest text
	order    []string                    // sessions with pending text, in order
	frame    int
	progress bool // a progress line is on screen
	// children maps a known child session to the label its text is shown
	// under (the card's header, else its id); at most maxChildLabels.
	children map[string]string
}

// maxChildLabels bounds the child sessions whose labels a Terminal keeps;
// text of a child beyond it is labelled by its session id.
const maxChildLabels = 4096

// NewTerminal returns a renderer writing to w. animate enables the progress
// line and its spinner; pass false when w is not a terminal.
func NewTerminal(w io.Writer, animate bool) *Terminal {
	return &Terminal{w: w, animate: animate, board: NewBoard(), text: map[string]*strings.Builder{}, textMsg: map[string]string{},
		children: map[string]string{}}
}

// Board returns the cards seen so far. The board is not safe for
// concurrent use: read it only once no more events can arrive, or use
// WriteJSON and Summary, which hold the terminal's lock.
func (t *Terminal) Board() *Board { return t.board }

// WriteJSON writes the --json card lines of the board (see the package
// function WriteJSON) under the terminal's lock, so an event that still
// arrives (a late extension request) cannot change the board meanwhile.
func (t *Terminal) WriteJSON(w io.Writer, agent string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return WriteJSON(w, t.board, agent)
}

// maxPendingText bounds the agent text held while waiting for a newline;
// a longer line is shown in pieces of this size.
const maxPendingText = 64 << 10

// maxPendingSessions bounds the sessions with text held at once: a chunk
// for one more session first shows what every other session holds.
const maxPendingSessions = 64

// AgentText appends a chunk of the agent's message in a session. Text is
// shown a line at a time; Flush shows what is left.
func (t *Terminal) AgentText(sessionID, chunk string) { t.AgentMessage(sessionID, "", chunk) }

// AgentMessage appends a chunk of the agent message messageID ("" when the
// agent names none) in a session. A chunk of another message than the
// pending text's first shows that text as a line of its own: two messages
// never run together.
func (t *Terminal) AgentMessage(sessionID, messageID, chunk string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev, ok := t.textMsg[sessionID]; ok && messageID != "" && prev != "" && prev != messageID {
		if b := t.text[sessionID]; b != nil {
			if rest := strings.TrimSpace(b.String()); rest != "" {
				t.logLocked(t.speaker(sessionID) + rest)
			}
			b.Reset()
		}
	}
	b, ok := t.text[sessionID]
	if !ok && len(t.text) >= maxPendingSessions {
		t.flushTextLocked() // also bounds textMsg, which has no more keys than text
	}
	t.textMsg[sessionID] = messageID
	if !ok {
		b = &strings.Builder{}
		t.text[sessionID] = b
		t.order = append(t.order, sessionID)
	}
	b.WriteString(chunk)
	// Only the new chunk can hold the line end, so a long line arriving in
	// many chunks costs linear, not quadratic, work.
	if strings.IndexByte(chunk, '\n') < 0 && b.Len() < maxPendingText {
		return
	}
	s := b.String()
	i := strings.LastIndexByte(s, '\n')
	if i < 0 {
		i = len(s) // an over-long line: show what arrived so far
	}
	for _, line := range strings.Split(s[:i], "\n") {
		if strings.TrimSpace(line) != "" {
			t.logLocked(t.speaker(sessionID) + line)
		}
	}
	rest := ""
	if i < len(s) {
		rest = s[i+1:]
	}
	b.Reset()
	b.WriteString(rest)
}

// Event shows one adapter event.
func (t *Terminal) Event(ev adapter.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.eventLocked(ev)
}

// Record shows one event of the sink fan-out: the terminal view is one of
// the sinks (sink.Sink).
func (t *Terminal) Record(e sink.Event) { t.Event(e.Event) }

// speaker is the prefix of a session's text: "agent: " for the agent's own
// sessions, "↳ <child's card>: " for a known child session.
func (t *Terminal) speaker(sessionID string) string {
	if label, ok := t.children[sessionID]; ok {
		return "↳ " + label + ": "
	}
	return "agent: "
}

// noteChild remembers the child session an event reveals: the session of
// a subagent-session card, or an event's own session when it has a parent.
func (t *Terminal) noteChild(ev adapter.Event, c *Card) {
	child, label := "", ""
	switch {
	case ev.Child != nil && ev.Child.SessionID != "":
		child = ev.Child.SessionID
		if c != nil && c.IsSubagent() {
			label = oneLine(Header(c), 60)
		}
	case ev.ParentSessionID != "":
		child = ev.SessionID
	default:
		return
	}
	if label == "" {
		if _, ok := t.children[child]; ok {
			return // keep the better label a card gave
		}
		label = "session " + truncate(child, 24)
	}
	if _, ok := t.children[child]; ok || len(t.children) < maxChildLabels {
		t.children[child] = label
	}
}

func (t *Terminal) eventLocked(ev adapter.Event) {
	t.flushTextLocked()
	if ev.Kind == adapter.EventSessionMessage && ev.Message != nil {
		t.logLocked(messageLine(ev.Message))
		return
	}
	before, seen := t.snapshot(ev)
	c := t.board.Apply(ev)
	t.noteChild(ev, c)
	if c == nil {
		return
	}
	depth := t.depth(c)
	indent := strings.Repeat("  ", depth)
	switch {
	case c.IsSubagent():
		line := fmt.Sprintf("%s◆ %s [%s]", indent, Header(c), cardStatus(c))
		if !seen || line != before {
			t.logLocked(line)
		}
	case !seen || before != string(c.Status):
		title := c.Event.Title
		if title == "" {
			title = c.Event.ToolCallID
		}
		t.logLocked(fmt.Sprintf("%s· %s [%s]", indent, oneLine(title, 72), statusWord(c.Status)))
	}
}

// snapshot returns what was last shown for the event's card: the subagent
// line for subagents, the status for other tool calls.
func (t *Terminal) snapshot(ev adapter.Event) (string, bool) {
	c, ok := t.board.cards[cardKey{ev.SessionID, ev.ToolCallID}]
	if !ok {
		return "", false
	}
	if c.IsSubagent() {
		return fmt.Sprintf("%s◆ %s [%s]", strings.Repeat("  ", t.depth(c)), Header(c), cardStatus(c)), true
	}
	return string(c.Status), true
}

// depth is the card's nesting depth (bounded, so a cycle cannot loop). A
// tool call of a child session sits one level under the parent's cards.
func (t *Terminal) depth(c *Card) int {
	d := 0
	if c.Event.ParentSessionID != "" && !c.IsSubagent() {
		d = 1
	}
	for p := c.Event.ParentToolCallID; p != "" && d < 8; d++ {
		parent, ok := t.board.cards[cardKey{c.Event.SessionID, p}]
		if !ok {
			return d + 1
		}
		p = parent.Event.ParentToolCallID
	}
	return d
}

// Permission shows a permission request and the answer it was given.
func (t *Terminal) Permission(title, answer string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushTextLocked()
	if title == "" {
		title = "a tool call"
	}
	t.logLocked(fmt.Sprintf("? permission for %s → %s", oneLine(title, 72), answer))
}

// Note shows one line of acpscope's own in the live log (such as the
// bounds of the history a session/load replays), sanitised like agent text.
func (t *Terminal) Note(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushTextLocked()
	t.logLocked(printable(line))
}

// Tick advances the spinner; it does nothing without animation or when no
// subagent runs.
func (t *Terminal) Tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.animate {
		return
	}
	t.frame++
	t.drawProgressLocked()
}

// Flush shows pending agent text and removes the progress line.
func (t *Terminal) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushTextLocked()
	t.clearProgressLocked()
}

func (t *Terminal) flushTextLocked() {
	for _, s := range t.order {
		if rest := strings.TrimSpace(t.text[s].String()); rest != "" {
			t.logLocked(t.speaker(s) + rest)
		}
		t.text[s].Reset()
	}
	t.order = t.order[:0]
	for k := range t.text {
		delete(t.text, k)
	}
	for k := range t.textMsg {
		delete(t.textMsg, k)
	}
}

// logLocked writes one log line above the progress line. Control and
// bidirectional formatting characters an agent put into its text or titles
// are replaced (safetext), so they can neither drive the terminal nor
// break or disguise the plain output.
func (t *Terminal) logLocked(line string) {
	t.clearProgressLocked()
	fmt.Fprintln(t.w, printable(line))
	t.drawProgressLocked()
}

// printable is the one sanitiser, safetext.Text.
func printable(s string) string { return safetext.Text(s) }

func (t *Terminal) clearProgressLocked() {
	if t.progress {
		fmt.Fprint(t.w, "\r\033[K")
		t.progress = false
	}
}

func (t *Terminal) drawProgressLocked() {
	if !t.animate {
		return
	}
	n := t.board.Running()
	t.clearProgressLocked()
	if n == 0 {
		return
	}
	unit := "subagents"
	if n == 1 {
		unit = "subagent"
	}
	fmt.Fprintf(t.w, "%s %d %s running", spinnerFrames[t.frame%len(spinnerFrames)], n, unit)
	t.progress = true
}

// Summary writes the subagent cards of the turn.
func (t *Terminal) Summary() {
	t.Flush()
	t.mu.Lock()
	defer t.mu.Unlock()
	WriteCards(t.w, t.board)
}

// WriteCards writes every subagent card on b: header and status, chips, and
// a body (the result, else the nested tool calls, else the prompt).
func WriteCards(w io.Writer, b *Board) {
	subs := b.Subagents()
	children := b.ChildIndex() // one pass: the summary stays linear in cards
	fmt.Fprintf(w, "\nSubagents (%d)\n", len(subs))
	if b.Forgotten > 0 {
		fmt.Fprintf(w, "(%d older cards were dropped to bound memory; --db keeps every subagent)\n", b.Forgotten)
	}
	for _, c := range subs {
		children := children[cardKey{c.Event.SessionID, c.Event.ToolCallID}]
		fmt.Fprintf(w, "\n◆ %s [%s]\n", printable(Header(c)), printable(cardStatus(c)))
		if chips := Chips(c, len(children)); len(chips) > 0 {
			fmt.Fprintf(w, "  %s\n", printable(strings.Join(chips, " · ")))
		}
		t := c.Event.Payload.SubagentTask
		switch {
		case t.ResultText != "":
			for _, line := range strings.Split(strings.TrimSpace(t.ResultText), "\n") {
				fmt.Fprintf(w, "  │ %s\n", printable(line))
			}
		case len(children) > 0:
			for i, ch := range children {
				branch := "├"
				if i == len(children)-1 {
					branch = "└"
				}
				title := ch.Event.Title
				if ch.IsSubagent() {
					title = Header(ch)
				}
				fmt.Fprintf(w, "  %s %s [%s]\n", branch, printable(oneLine(title, 72)), printable(cardStatus(ch)))
			}
		case t.Prompt != "":
			fmt.Fprintf(w, "  prompt: %s\n", printable(oneLine(t.Prompt, 100)))
		}
	}
}

// cardStatus is the word shown for a card: its tool status, except for a
// child session that is not confirmed live. Such a child shows its last
// state instead ("unknown", "idle" without an outcome, an unrecognised
// state verbatim), and a last-known running or requires_action is marked
// "not live", so nothing is presented as running that is not confirmed.
func cardStatus(c *Card) string {
	ch := c.Event.Child
	if ch != nil && ch.Live && c.Status.Terminal() {
		// A finished child the agent runs again (a follow-up message).
		return ch.State + " again"
	}
	if ch == nil || ch.Live || c.Status.Terminal() || ch.State == "" {
		return statusWord(c.Status)
	}
	if ch.State == "running" || ch.State == "requires_action" {
		return ch.State + ", not live"
	}
	return oneLine(ch.State, 40)
}

// statusWord renders a tool status; an unknown one shows as "pending".
func statusWord(s adapter.ToolStatus) string {
	if s == adapter.ToolStatusUnchanged {
		return "pending"
	}
	return string(s)
}

// messageLine renders an inter-session message view. Messages are shown as
// "to" or "from" another session, never as the user's own words.
func messageLine(m *adapter.MessageView) string {
	text := oneLine(m.Text, 100)
	switch m.Direction {
	case adapter.MessageOutgoing:
		return fmt.Sprintf("→ to %s: %s", orUnknown(m.RecipientSessionID), text)
	case adapter.MessageIncoming:
		return fmt.Sprintf("← from %s: %s", orUnknown(m.SenderSessionID), text)
	}
	return fmt.Sprintf("⇢ inter-session message (sender unknown): %s", text)
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown session"
	}
	return s
}

// cardLine is one --json output line: a subagent card after the turn.
type cardLine struct {
	// SessionID is the session the card belongs to.
	SessionID string `json:"session_id"`
	// ToolCallID is the card's tool call id (or child session id).
	ToolCallID string `json:"tool_call_id"`
	// ParentToolCallID names the parent card: the launching tool call of a
	// nested card, or, for a card in a child session, that child
	// session's own card (keyed by the child session id); "" at top level.
	ParentToolCallID string `json:"parent_tool_call_id"`
	// ParentSessionID is the session holding the parent card when it is
	// not SessionID (the card is in a child session); "" otherwise.
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// ReferencedBy lists the tool calls whose `session` content names
	// this card's child session (TaskStop, SendMessage, …), first seen
	// first.
	ReferencedBy []string `json:"referenced_by,omitempty"`
	// Agent is the dialect name (cursor, claude, codex, opencode, auggie,
	// copilot, gemini, qwen, generic).
	Agent string `json:"agent"`
	// ToolStatus is the card's tool status (pending, in_progress, complete,
	// error, cancelled).
	ToolStatus string `json:"tool_status"`
	// Normalized is the normalised payload, under the key adapter.Event
	// uses for it.
	Normalized *adapter.Payload `json:"normalized"`
}

// parentOf names c's parent card: its launching tool call in its own
// session, else, for a card in a child session, that child session's card
// in the parent session (keyed by the child session id, or, for a later
// AIR generation `<task>:generation:<n>` that no card is keyed by, the
// task's one card); "", "" at top level.
func (b *Board) parentOf(c *Card) (toolCallID, sessionID string) {
	switch {
	case c.Event.ParentToolCallID != "":
		return c.Event.ParentToolCallID, ""
	case c.Event.ParentSessionID != "":
		call := c.Event.SessionID
		if _, ok := b.cards[cardKey{c.Event.ParentSessionID, call}]; !ok {
			if task := adapter.AIRTaskID(call); task != call {
				if _, ok := b.cards[cardKey{c.Event.ParentSessionID, task}]; ok {
					call = task
				}
			}
		}
		return call, c.Event.ParentSessionID
	}
	return "", ""
}

// childSessionOf is the child session behind a subagent-session card ("" for
// a tool-call card).
func childSessionOf(c *Card) string {
	if c.Event.Child != nil {
		return c.Event.Child.SessionID
	}
	return ""
}

// WriteJSON writes one cardLine per subagent card on b, in first-seen order.
func WriteJSON(w io.Writer, b *Board, agent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	refs := b.referrers()
	for _, c := range b.Subagents() {
		buf.Reset()
		parentCard, parentSession := b.parentOf(c)
		line := cardLine{
			SessionID:        c.Event.SessionID,
			ToolCallID:       c.Event.ToolCallID,
			ParentToolCallID: parentCard,
			ParentSessionID:  parentSession,
			ReferencedBy:     refs[childSessionOf(c)],
			Agent:            agent,
			ToolStatus:       statusWord(c.Status),
			Normalized:       c.Event.Payload,
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
		// Control and bidirectional characters are escaped: the same JSON
		// value, nothing a terminal acts on.
		if _, err := w.Write(safetext.JSON(buf.Bytes())); err != nil {
			return err
		}
	}
	return nil
}
