package adapter

import (
	"path"
	"slices"
	"strings"
)

// Codex counters.
const (
	// CounterCodexThreadsEvicted counts child threads forgotten by
	// MaxCodexThreads.
	CounterCodexThreadsEvicted = "codex_threads_evicted"
)

// MaxCodexThreads bounds the child threads the Codex dialect remembers per
// session (thread → card); the oldest is forgotten beyond it.
const MaxCodexThreads = 256

// codexDialect reads what codex-acp 2.6.0 (Codex 0.166) sends for its
// subagents, as recorded in conformance/agents/testdata/codex-acp-2.6.0/.
// codex-acp 0.16.0 sends nothing for them, so it gets no card.
//
// Without clientCapabilities.subagents (tool calls):
//
//   - multi_agent v1: a `spawnAgent` tool call (rawInput prompt,
//     senderThreadId, receiverThreadIds, agentsStates, model) is the card.
//     Its `completed` update right after launch names the child thread and
//     is a launch receipt, not a result: the card stays in progress. The
//     answer arrives in a `wait` tool call's update,
//     agentsStates[child] = {status, message}: the message is the result
//     and the status word ends the card (completed → complete, errored →
//     error, interrupted or shutdown → cancelled). The wait call itself
//     stays an ordinary tool call.
//   - multi_agent v2: "Start subagent NAME" (rawInput agentThreadId,
//     agentPath "/root/NAME", activityKind "started") is the card, with the
//     task name as type and description; the later, separate "Complete
//     subagent NAME" call (activityKind "completed") is folded into it, so
//     one card spans both. Neither carries prompt nor answer.
//
// With clientCapabilities.subagents the children are child sessions, read
// by the adapter core; Codex names them "<root>:subagent:<thread>", so the
// agent id is the thread, and a v1 child's description is its prompt. A
// wait result for such a child fills its result when the child's own
// message did not.
type codexDialect struct {
	Base
	sessions map[string]*codexThreads
	cur      *codexFrame // the frame between Prepare and Apply
}

// codexThreads maps a session's child threads to their cards.
type codexThreads struct {
	card  map[string]string // child thread id → card key
	order []string
	// unnamed are the spawn cards no frame named a thread for yet, in
	// launch order (at most MaxCodexThreads): to an AIR client codex-acp
	// never sends the spawnAgent completion that names it.
	unnamed []string
}

// codexFrame is what Prepare learned from one frame of a subagent card.
type codexFrame struct {
	prompt, description, subagentType, model, thread, status string
	end                                                      ToolStatus // a v2 activity that ends the child
	launch                                                   bool       // the frame launches the child (spawn, started)
}

// valueCodexLaunch marks a card made by a launch call, whose own
// completion is a receipt.
const valueCodexLaunch = "codex.launch"

func init() {
	Register(DialectCodex, func() Dialect { return &codexDialect{sessions: map[string]*codexThreads{}} })
}

// Name returns "codex".
func (d *codexDialect) Name() string { return DialectCodex }

// Prepare recognises the frames of Codex subagents, folds a v2 completion
// into its start card, keeps a launch receipt from ending a card, and
// applies a wait result to the cards of the children it reports.
func (d *codexDialect) Prepare(tx *Tx, f *ToolFrame) bool {
	d.cur = nil
	in := f.RawInputMap()
	held, _ := tx.Card(f.SessionID, f.ToolCallID)
	if in == nil {
		if held != nil && held.Value(valueCodexLaunch) == true && f.Status == "completed" {
			// The launch call's own completion (v2 sends it bare): a
			// receipt, not the child's end.
			f.Status = ""
		}
		return true
	}
	r := f.Read
	title := ""
	if f.Title != nil {
		title = *f.Title
	} else if held != nil {
		title = held.Title()
	}
	switch {
	case r.String(in, "activityKind") != "" && r.String(in, "agentThreadId") != "":
		d.prepareActivity(tx, f, in)
	case title == "spawnAgent" && hasKey(in, "senderThreadId"):
		d.prepareSpawn(tx, f, in)
	case title == "wait" && hasKey(in, "senderThreadId"):
		d.applyWait(tx, f.SessionID, in, r)
	}
	return true
}

// prepareSpawn reads a v1 spawnAgent frame.
func (d *codexDialect) prepareSpawn(tx *Tx, f *ToolFrame, in map[string]any) {
	r := f.Read
	cf := &codexFrame{prompt: r.String(in, "prompt"), model: r.String(in, "model"), launch: true}
	cf.description = cf.prompt
	cf.thread = firstString(r, in, "receiverThreadIds")
	named := false
	if held, ok := tx.Card(f.SessionID, f.ToolCallID); ok && held.Task() != nil {
		named = held.Task().ChildSessionID != ""
	}
	d.noteUnnamed(tx, f.SessionID, f.ToolCallID, cf.thread == "" && !named)
	if cf.thread != "" {
		d.remember(tx, f.SessionID, cf.thread, f.ToolCallID)
		cf.status = r.String(r.Map(r.Map(in, "agentsStates"), cf.thread), "status")
	}
	if f.Status == "completed" {
		// The launch receipt: the child runs on; its end comes from a wait.
		f.Status = ""
	}
	d.cur = cf
}

// prepareActivity reads a v2 activity frame: started makes the card, any
// other activity is folded into the started card of its thread.
func (d *codexDialect) prepareActivity(tx *Tx, f *ToolFrame, in map[string]any) {
	r := f.Read
	thread := r.String(in, "agentThreadId")
	activity := r.String(in, "activityKind")
	cf := &codexFrame{thread: thread, status: activity}
	if p := r.String(in, "agentPath"); p != "" {
		if base := path.Base(strings.TrimRight(p, "/")); base != "." && base != "/" {
			cf.description, cf.subagentType = base, base
		}
	}
	switch ts, ends := outcomeStatus(activity); {
	case activity == "started":
		cf.launch = true
		d.remember(tx, f.SessionID, thread, f.ToolCallID)
		f.Status = "" // a finished start is not a finished child
	case ends:
		if card := d.cardOf(f.SessionID, thread); card != "" && card != f.ToolCallID {
			f.ToolCallID, f.Title, f.Create = card, nil, false
		}
		// The activity word, not the call's own status, ends the child.
		f.Status = ""
		cf.end = ts
	}
	d.cur = cf
}

// applyWait applies each child state a wait reports to that child's card:
// its message is the result, its status word ends the card.
func (d *codexDialect) applyWait(tx *Tx, sessionID string, in map[string]any, r *FieldReader) {
	states := r.Map(in, "agentsStates")
	d.nameTheOnlyUnnamed(tx, sessionID, in, states, r)
	for _, thread := range sortedKeys(states) {
		st := r.Map(states, thread)
		card := d.waitCard(tx, sessionID, thread)
		if card == nil || card.Task() == nil {
			continue
		}
		task := card.Task()
		word := r.String(st, "status")
		changed := FillString(&task.ResultText, r.String(st, "message"))
		if word != "" && OverwriteString(&task.Status, word) {
			changed = true
		}
		if ts, ok := outcomeStatus(word); ok && card.SetStatus(ts) {
			changed = true
		}
		if changed {
			tx.Emit(EventToolUpdate, card)
		}
	}
}

// waitCard is the card of a child thread a wait names: its spawn card, or
// its child session card ("<session>:subagent:<thread>").
func (d *codexDialect) waitCard(tx *Tx, sessionID, thread string) *Card {
	if id := d.cardOf(sessionID, thread); id != "" {
		if c, ok := tx.Card(sessionID, id); ok {
			return c
		}
	}
	if c, ok := tx.Card(sessionID, sessionID+codexSubagentInfix+thread); ok {
		return c
	}
	return nil
}

// threads returns the session's thread map, creating it.
func (d *codexDialect) threads(sessionID string) *codexThreads {
	s := d.sessions[sessionID]
	if s == nil {
		s = &codexThreads{card: map[string]string{}}
		d.sessions[sessionID] = s
	}
	return s
}

// noteUnnamed records (unnamed true) or forgets a spawn card whose thread
// is not known.
func (d *codexDialect) noteUnnamed(tx *Tx, sessionID, card string, unnamed bool) {
	s := d.threads(sessionID)
	i := slices.Index(s.unnamed, card)
	switch {
	case unnamed && i < 0:
		s.unnamed = append(s.unnamed, card)
		if len(s.unnamed) > MaxCodexThreads {
			s.unnamed = slices.Delete(s.unnamed, 0, 1)
			tx.Count(CounterCodexThreadsEvicted, 1)
		}
	case !unnamed && i >= 0:
		s.unnamed = slices.Delete(s.unnamed, i, i+1)
	}
}

// nameTheOnlyUnnamed pairs a wait's one thread no card holds with the
// session's one spawn card whose thread is unknown (codex-acp 2.6.0 to an
// AIR client sends no spawnAgent completion). With more of either the
// pairing would be a guess, and none is made.
func (d *codexDialect) nameTheOnlyUnnamed(tx *Tx, sessionID string, in, states map[string]any, r *FieldReader) {
	s := d.sessions[sessionID]
	if s == nil || len(s.unnamed) != 1 {
		return
	}
	var unknown []string
	for _, th := range append(stringsOf(r.Slice(in, "receiverThreadIds")), sortedKeys(states)...) {
		if th != "" && !slices.Contains(unknown, th) && d.waitCard(tx, sessionID, th) == nil {
			unknown = append(unknown, th)
		}
	}
	if len(unknown) != 1 {
		return
	}
	card, ok := tx.Card(sessionID, s.unnamed[0])
	if !ok || card.Task() == nil {
		return
	}
	s.unnamed = nil
	d.remember(tx, sessionID, unknown[0], card.ToolCallID())
	FillString(&card.Task().AgentID, unknown[0])
	FillString(&card.Task().ChildSessionID, unknown[0])
}

// stringsOf is the strings of an array, in order.
func stringsOf(vs []any) []string {
	var out []string
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *codexDialect) remember(tx *Tx, sessionID, thread, card string) {
	s := d.threads(sessionID)
	if _, ok := s.card[thread]; ok {
		return
	}
	s.card[thread] = card
	s.order = append(s.order, thread)
	if len(s.order) > MaxCodexThreads {
		delete(s.card, s.order[0])
		s.order = s.order[1:]
		tx.Count(CounterCodexThreadsEvicted, 1)
	}
}

func (d *codexDialect) cardOf(sessionID, thread string) string {
	if s := d.sessions[sessionID]; s != nil {
		return s.card[thread]
	}
	return ""
}

// Recognize makes a card of every spawn and activity frame.
func (d *codexDialect) Recognize(tx *Tx, c *Card, f *ToolFrame) bool {
	return d.cur != nil
}

// Apply fills the payload from what Prepare read.
func (d *codexDialect) Apply(tx *Tx, c *Card, f *ToolFrame) {
	cf := d.cur
	d.cur = nil
	if cf == nil {
		return
	}
	t := c.Task()
	if cf.launch {
		c.SetValue(valueCodexLaunch, true)
	}
	FillString(&t.Prompt, cf.prompt)
	FillString(&t.Description, cf.description)
	FillString(&t.SubagentType, cf.subagentType)
	FillString(&t.Model, cf.model)
	FillString(&t.AgentID, cf.thread)
	FillString(&t.ChildSessionID, cf.thread)
	OverwriteString(&t.Status, cf.status)
	if cf.end != ToolStatusUnchanged {
		c.SetStatus(cf.end)
	}
}

// SessionCleared forgets the threads of the cleared sessions.
func (d *codexDialect) SessionCleared(tx *Tx, sessionID string) {
	if sessionID == "" {
		d.sessions = map[string]*codexThreads{}
		return
	}
	delete(d.sessions, sessionID)
}

// codexSubagentInfix joins a root session id and a child thread id into
// the child session id codex-acp announces.
const codexSubagentInfix = ":subagent:"

// ChildAgentID is the thread of a "<root>:subagent:<thread>" child session.
func (d *codexDialect) ChildAgentID(childSessionID string) string {
	if i := strings.LastIndex(childSessionID, codexSubagentInfix); i >= 0 {
		return childSessionID[i+len(codexSubagentInfix):]
	}
	return ""
}

// ApplyChildDescription: a v1 child's description is its prompt.
func (d *codexDialect) ApplyChildDescription(task *SubagentTask, description string) {
	FillString(&task.Prompt, description)
	FillString(&task.Description, description)
}

// IsLaunchReceipt: Codex sends no receipt text.
func (d *codexDialect) IsLaunchReceipt(string) bool { return false }

// SessionLimits are the defaults.
func (d *codexDialect) SessionLimits() SessionLimits { return SessionLimits{} }

func firstString(r *FieldReader, m map[string]any, key string) string {
	for _, v := range r.Slice(m, key) {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func hasKey(m map[string]any, key string) bool {
	_, ok := m[key]
	return ok
}

// sortedKeys are m's keys in order, so a wait reporting several children
// updates their cards in one order every time.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
