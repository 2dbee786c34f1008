package adapter

// The JetBrains AIR subagent form, read as the standard it drafts, beside
// the ACP subagent-session form and through the same child-session
// machinery (sessionform.go): a client that declares
// clientCapabilities._meta.jetbrains.air gets, on the parent session,
// subagent_spawned (the child session announced) and, once at the end,
// subagent_state_update (completed, failed, cancelled, disconnected); the
// child's own updates arrive on its session. The SDK knows neither kind:
// they reach the adapter as unknown session updates with their raw bytes
// (acp.SessionUpdate.Unknown). docs/subagents.md#air.

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// AIR capability names a client may declare in
// clientCapabilities._meta.jetbrains.air.capabilities.
const (
	// AIRNativeSubagentSessions asks for children as sessions
	// (subagent_spawned, subagent_state_update).
	AIRNativeSubagentSessions = "nativeSubagentSessions"
	// AIRBackgroundSubagents lets the prompt answer come while children
	// still run: their updates and requests arrive after it.
	AIRBackgroundSubagents = "backgroundSubagents"
	// AIRAsyncTasks asks for background work as async_task_* updates.
	AIRAsyncTasks = "asyncTasks"
)

// CounterAsyncTaskUpdates counts AIR async_task_* updates: background work
// of a session (a shell, a workflow, a monitor), not subagents; never a
// card (docs/subagents.md#air).
const CounterAsyncTaskUpdates = "async_task_updates"

// CounterAIRStaleGeneration counts subagent_state_update for a generation
// of a child that a later generation already replaced: not applied.
const CounterAIRStaleGeneration = "air_stale_generation"

// AIR session-update kinds.
const (
	airSpawned     = "subagent_spawned"
	airStateUpdate = "subagent_state_update"
)

// airKinds are the session-update kinds of the AIR form.
var airKinds = map[string]bool{
	airSpawned: true, airStateUpdate: true,
	"async_task_spawned": true, "async_task_progress": true, "async_task_state_update": true,
}

// declaresAIR reads clientCapabilities._meta.jetbrains.air: declared when
// it is an object whose version is an integer of at least 1; the
// capabilities are the strings of its capabilities array, verbatim.
func declaresAIR(meta map[string]any) (declared bool, caps []string) {
	var r FieldReader
	a := r.Map(r.Map(meta, "jetbrains"), "air")
	if a == nil {
		return false, nil
	}
	if v, ok := integer(a["version"]); !ok || v < 1 {
		return false, nil
	}
	caps = []string{}
	for _, c := range r.Slice(a, "capabilities") {
		if s, ok := c.(string); ok {
			caps = append(caps, s)
		}
	}
	return true, caps
}

// BackgroundChildren reports whether the client declared AIR's
// backgroundSubagents: the prompt answer may then come while children
// still run, so a child outlives its turn (and a later turn's cancel).
func (ci ConnectionInfo) BackgroundChildren() bool {
	return slices.Contains(ci.AIRCapabilities, AIRBackgroundSubagents)
}

// integer is v as an integer when it is a JSON number without a fraction.
func integer(v any) (int64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		g, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = g
	default:
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// airUpdate is one AIR subagent update, read defensively: a field of the
// wrong type is empty (and counted bad).
type airUpdate struct {
	kind  string
	child string // subagentSessionId
	name  string
	task  string
	// prompt is the child's prompt when the agent sent one.
	prompt string
	// state is subagent_state_update's word, verbatim.
	state string
	// caps is the capabilities object (nil when absent or not one).
	caps map[string]any
	bad  int
}

// parseAIR reads an AIR update's raw object (as acp.SessionUpdate.Unknown
// keeps it); ok is false when raw is not a JSON object.
func parseAIR(kind string, raw json.RawMessage) (u airUpdate, ok bool) {
	m := AsMap(raw)
	if m == nil {
		return airUpdate{kind: kind}, false
	}
	var r FieldReader
	u = airUpdate{
		kind:   kind,
		child:  r.String(m, "subagentSessionId"),
		name:   r.String(m, "name"),
		task:   r.String(m, "task"),
		prompt: r.String(m, "prompt"),
		state:  r.String(m, "state"),
		caps:   r.Map(m, "capabilities"),
	}
	u.bad = r.Bad
	return u, true
}

// airGenerationInfix separates a child's task id from its generation in
// a resumed child's session id (`<taskId>:generation:<n>`).
const airGenerationInfix = ":generation:"

// AIRTaskID is the task id behind an AIR child session id: the id itself,
// or what precedes `:generation:<digits>`. It is the tool call id of the
// one card every generation of an AIR child shares, so a consumer that
// nests a child session's cards under the card keyed by that session's id
// finds a later generation's card here when no card has the id itself.
func AIRTaskID(child string) string {
	i := strings.LastIndex(child, airGenerationInfix)
	if i <= 0 {
		return child
	}
	n := child[i+len(airGenerationInfix):]
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return child
	}
	return child[:i]
}

// handleAIR handles one AIR update. Without the AIR declaration the kinds
// are dropped and counted, changing nothing.
func (d *sessionForm) handleAIR(tx *Tx, parent, kind string, raw json.RawMessage) {
	if !tx.Connection().AIRDeclared {
		tx.Count(CounterSubagentFramesOff, 1)
		return
	}
	if kind != airSpawned && kind != airStateUpdate {
		tx.Count(CounterAsyncTaskUpdates, 1)
		return
	}
	u, ok := parseAIR(kind, raw)
	if u.bad > 0 {
		tx.Count(CounterBadFields, int64(u.bad))
	}
	if !ok || u.child == "" || u.child == parent {
		tx.Count(CounterBadSubagentUpdate, 1)
		return
	}
	if kind == airSpawned {
		d.airSpawned(tx, parent, u)
	} else {
		d.airSettled(tx, parent, u)
	}
}

// airSpawned makes (or, for a new generation, reopens) the child's card:
// name → description, prompt (else task) → prompt, the session id →
// child_session_id. A child is keyed by its task id, so every generation
// of it is one card.
func (d *sessionForm) airSpawned(tx *Tx, parent string, u airUpdate) {
	key := AIRTaskID(u.child)
	if p, ok := d.sessions.children[u.child]; ok && p != parent {
		tx.Count(CounterChildReparent, 1)
		return
	}
	if p, ok := d.sessions.children[key]; ok && key != u.child && p != parent {
		// A later generation launched from another parent stays the
		// card of its first parent.
		parent = p
	}
	card, created := tx.NewCard(parent, key)
	if !d.sessions.known(u.child) {
		d.announce(tx, u.child, parent)
	}
	if key != u.child {
		d.sessions.alias(u.child, key)
	}
	task := card.MarkSubagent()
	view := card.Child()
	if view == nil {
		view = &ChildSession{ParentSessionID: parent}
		card.SetChild(view)
		card.KeepAcrossTurns()
	}
	view.air = true
	view.SessionID = u.child
	FillString(&task.Description, u.name)
	view.Title = task.Description
	card.SetTitle(task.Description)
	prompt := u.prompt
	if prompt == "" {
		prompt = u.task
	}
	FillString(&task.Prompt, prompt)
	OverwriteString(&task.ChildSessionID, u.child)
	// The task id is the agent's own id for the child (Claude's agent id,
	// Codex's thread id) unless the dialect reads another.
	agentID := d.agentID(key)
	if agentID == "" {
		agentID = key
	}
	FillString(&task.AgentID, agentID)
	loading := tx.Loading(parent)
	replayedOverFinished := loading && !created && card.Terminal()
	if !replayedOverFinished {
		view.State, view.StopReason, view.StateRaw = "running", "", nil
		view.Live = true
		task.Status = "running"
		card.SetStatus(ToolStatusInProgress)
	}
	_, view.cancelGranted = u.caps["cancel"].(map[string]any)
	if loading {
		view.Live, view.cancelGranted = false, false
	}
	view.refreshCancel()
	task.Live = view.Live
	kind := EventToolUpdate
	if created {
		kind = EventToolCall
	}
	tx.Emit(kind, card)
}

// airSettled applies subagent_state_update: completed, failed and
// cancelled are the card's outcome (complete, error, cancelled; a
// completed child's last message its result); disconnected is the ACP
// unknown (the agent lost track: not live, no outcome); any other word is
// kept verbatim, neither live nor an outcome. A state for a generation a
// later one replaced is stale.
func (d *sessionForm) airSettled(tx *Tx, parent string, u airUpdate) {
	card, ok := d.card(tx, u.child)
	if !ok || !card.IsSubagent() || card.Child() == nil || u.state == "" {
		tx.Count(CounterBadSubagentUpdate, 1)
		return
	}
	view, task := card.Child(), card.Task()
	if view.SessionID != u.child {
		tx.Count(CounterAIRStaleGeneration, 1)
		return
	}
	if tx.Loading(parent) && card.Terminal() {
		return // replayed history never revises a finished card
	}
	view.State, view.StopReason, view.StateRaw = u.state, "", nil
	view.Live, view.cancelGranted = false, false
	switch u.state {
	case "completed":
		card.SetStatus(ToolStatusComplete)
	case "failed":
		card.SetStatus(ToolStatusError)
	case "cancelled":
		card.SetStatus(ToolStatusCancelled)
	case "disconnected":
		card.SetStatus(ToolStatusUnknown)
	}
	view.refreshCancel()
	task.Status, task.Live = u.state, false
	d.applyAnswer(tx, card, task)
	tx.Emit(EventToolUpdate, card)
}

// alias records that child is a generation of the card keyed key.
func (r *childRegistry) alias(child, key string) {
	if r.cardOf == nil {
		r.cardOf = map[string]string{}
	}
	r.cardOf[child] = key
}

// card returns the card of a known child session: its own, or for a
// later AIR generation the card of its task.
func (d *sessionForm) card(tx *Tx, child string) (*Card, bool) {
	parent, ok := d.sessions.children[child]
	if !ok {
		return nil, false
	}
	key := child
	if k, ok := d.sessions.cardOf[child]; ok {
		key = k
	}
	return tx.Card(parent, key)
}

// airUnknown reports an AIR kind among unknown session updates.
func airUnknown(u *acp.SessionUpdate) (kind string, raw json.RawMessage, ok bool) {
	kind, raw, ok = u.Unknown()
	if !ok || !airKinds[kind] {
		return "", nil, false
	}
	return kind, raw, true
}

// recognizeAIRMarker (R5) is a tool call AIR's contract marks as a
// subagent launch: `_meta.jetbrains.air.subagent` the JSON true (Claude
// sends it beside R1's toolName to an AIR client without native
// sessions).
func recognizeAIRMarker(_ *Card, f *ToolFrame) bool {
	a := AsMap(AsMap(f.Meta["jetbrains"])["air"])
	v, _ := a["subagent"].(bool)
	return v
}

// valueAIRMarked marks a card one of whose frames carried the AIR
// subagent marker.
const valueAIRMarked = "adapter.airMarked"

// mergeAIRContent: to an AIR client without native sessions Claude sends
// the legacy tool call marked as a subagent, its toolResponse reduced to
// the status; the child's answer is the text content of the completing
// update, which then fills result_text (only on marked cards: other
// agents' content is not a result).
func mergeAIRContent(c *Card, f *ToolFrame) {
	if recognizeAIRMarker(c, f) {
		c.SetValue(valueAIRMarked, true)
	}
	if c.Value(valueAIRMarked) != true || f.Status != "completed" {
		return
	}
	var parts []string
	for _, ct := range f.Content {
		if ct.Content != nil && ct.Content.Content.Text != nil && ct.Content.Content.Text.Text != "" {
			parts = append(parts, ct.Content.Content.Text.Text)
		}
	}
	FillString(&c.task.ResultText, strings.Join(parts, "\n"))
}
