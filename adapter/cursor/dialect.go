package cursor

import (
	"encoding/json"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// valueBackground is the per-card value (never on the payload) that
// remembers a completion's isBackground:true seen while the card was not yet
// recognised as a subagent, so that the final payload does not depend on
// whether the completion came before the tool_call. (The common pipeline
// does the same for durationMs.)
const valueBackground = "cursor.isBackground"

// Options configures a Cursor dialect.
type Options struct {
	// Limits bounds the pending store (zero fields use the defaults).
	Limits Limits
	// Now is the clock for the pending age cap (default time.Now).
	Now func() time.Time
}

// Dialect is the Cursor dialect of one connection. It adds three
// Cursor-only behaviours to the common pipeline:
//
//   - cursor/task metadata (description, prompt, model, agent id) merged
//     fill-if-empty into the subagent card with the same toolCallId, in
//     whichever order the request and the tool_call arrive;
//   - a completion rawOutput.isBackground == true marking the subagent
//     background (is_async, sticky);
//   - a bounded per-session pending store for requests whose card is not
//     known yet.
//
// The Tracker calls every hook with its lock held, so the dialect's state
// needs no lock of its own. A Dialect serves one connection; the registry
// makes a fresh one per Tracker.
type Dialect struct {
	adapter.Base
	pending *pendingStore
	stats   Stats
	flushed Stats
}

// NewDialect returns a Cursor dialect for one connection. Pass it as
// adapter.Config.Dialect to set the limits or the clock; otherwise the
// Tracker makes one with the defaults when the agent is Cursor.
func NewDialect(opts Options) *Dialect {
	d := &Dialect{}
	d.pending = newPendingStore(opts.Limits, opts.Now, &d.stats)
	return d
}

func init() {
	adapter.Register(adapter.DialectCursor, func() adapter.Dialect { return NewDialect(Options{}) })
}

// Name returns adapter.DialectCursor.
func (d *Dialect) Name() string { return adapter.DialectCursor }

// Recognize never makes a card a subagent by itself (Cursor subagents are
// recognised by the common rule R3, rawInput._toolName "task"). It records
// a completion's isBackground:true on a card that is not a subagent yet, so
// it still applies if a later frame recognises it.
func (d *Dialect) Recognize(tx *adapter.Tx, c *adapter.Card, f *adapter.ToolFrame) bool {
	out := f.RawOutputMap()
	if out == nil {
		return false
	}
	var r adapter.FieldReader // bad fields are counted when the card applies them
	if r.True(out, "isBackground") {
		c.SetValue(valueBackground, true)
	}
	return false
}

// Apply merges the Cursor-only facts into a subagent card, before the
// frame's event is emitted: pending cursor/task metadata for this
// (session, toolCallId), then rawOutput.isBackground.
func (d *Dialect) Apply(tx *adapter.Tx, c *adapter.Card, f *adapter.ToolFrame) {
	task := c.Task()
	if p, ok := d.pending.take(c.SessionID(), c.ToolCallID()); ok {
		mergeTask(task, p)
	}
	if c.Value(valueBackground) == true {
		adapter.SetSticky(&task.IsAsync, true)
	}
	if out := f.RawOutputMap(); out != nil {
		adapter.SetSticky(&task.IsAsync, f.Read.True(out, "isBackground"))
	}
	d.flush(tx)
}

// PromptEnded drops the session's unmatched requests: tool call ids may
// recur in the next turn and must not pick up stale metadata.
func (d *Dialect) PromptEnded(tx *adapter.Tx, sessionID string) {
	d.pending.clearSession(sessionID)
	d.flush(tx)
}

// SessionCleared drops every unmatched request of the connection: a
// session that is created, loaded, closed or reset replaces the
// connection's current session, and cursor/task carries no session id of
// its own, so no pending entry may outlive that change.
func (d *Dialect) SessionCleared(tx *adapter.Tx, sessionID string) {
	d.pending.clearAll()
	d.flush(tx)
}

// handleTask processes one cursor/task request or notification under the
// Tracker's lock. It never fails: what cannot be used is dropped and
// counted.
func (d *Dialect) handleTask(tx *adapter.Tx, raw json.RawMessage) {
	defer d.flush(tx)
	d.stats.Requests++
	p, ok := ParseTaskParams(raw)
	d.stats.Truncated += uint64(p.Truncated)
	if !ok {
		d.stats.Dropped++
		return
	}
	c, found := tx.FindCard(p.ToolCallID)
	switch {
	case found && c.IsSubagent():
		if !mergeTask(c.Task(), p) {
			d.stats.Unchanged++
			return
		}
		if c.Terminal() {
			d.stats.LateApplied++
		} else {
			d.stats.Applied++
		}
		// One update with the card's current status (terminal stays
		// terminal), stored title and parent.
		tx.Emit(adapter.EventToolUpdate, c)
	case found:
		// An active tool call that is not a subagent is never touched;
		// the metadata waits in case a later frame recognises it.
		d.stats.NonSubagent++
		d.pending.put(c.SessionID(), p)
	default:
		sid := tx.CurrentSession()
		if sid == "" {
			d.stats.Dropped++
			return
		}
		d.pending.put(sid, p)
	}
}

// mergeTask fills the payload's empty fields from p (fill-if-empty: a set
// field is never replaced or blanked). The model is kept verbatim; a
// "-fast" suffix does not touch is_async. It reports whether anything
// changed.
func mergeTask(task *adapter.SubagentTask, p TaskParams) bool {
	changed := adapter.FillString(&task.Description, p.Description)
	changed = adapter.FillString(&task.Prompt, p.Prompt) || changed
	changed = adapter.FillString(&task.Model, p.Model) || changed
	changed = adapter.FillString(&task.AgentID, p.AgentID) || changed
	return changed
}
