package adapter

import (
	"encoding/base64"
	"fmt"
	"path"
	"strings"
)

// Codex counters.
const (
	CounterCodexSuppressedTerminal  = "codex_unmatched_terminal"  // terminal activity with no correlation, suppressed
	CounterCodexSuppressedAmbiguous = "codex_ambiguous_childless" // childless result matching several correlations, suppressed
	CounterCodexEvicted             = "codex_correlations_evicted"
)

// MaxCodexCorrelations bounds the Codex correlations kept per session; the
// oldest is evicted beyond it.
const MaxCodexCorrelations = 256

// codexDialect reads two `_meta.codex` shapes of a Codex tool frame. It is
// active only for codex-acp: the same `_meta` from another agent stays
// generic. It is unverified: codex-acp 0.16.0 sends no tool call for its
// spawn_agent and wait_agent tools and nothing carrying `_meta.codex`, so no
// real agent has been seen to send what it reads.
//
//   - Collaboration: `collaboration.tool == "spawnAgent"` makes a card. The
//     child thread is the first `collaboration.receiverThreadIds` (else
//     `rawInput.receiverThreadIds`); prompt and model come from rawInput;
//     the description is `rawInput.agentsStates[child].message`, else the
//     prompt; the status `agentsStates[child].status`, else
//     `rawInput.status`. Other collaboration tools stay generic.
//   - Activity: `subagent.activity` "started" makes a card for
//     `subagent.threadId` (else `rawInput.agentThreadId`), described and
//     typed by the base name of `subagent.path` (else `rawInput.agentPath`);
//     a terminal activity word updates the card of that child thread and is
//     suppressed when none matches.
//
// Frames correlate by (session, wire tool call id, child thread): a wire id
// reused for another child gets a derived id, a childless frame matching
// several correlations is suppressed, and `collaboration.senderThreadId`
// nests a card under the only correlation whose child thread it is.
type codexDialect struct {
	Base
	sessions map[string][]*codexCorrelation
	cur      *codexFrame // the frame between Prepare and Apply
}

type codexCorrelation struct {
	wire    string
	child   string
	emitted string
}

// codexFrame is what Prepare learned from one frame.
type codexFrame struct {
	corr         *codexCorrelation
	prompt       string
	description  string
	subagentType string
	status       string
	model        string
}

func init() {
	Register(DialectCodex, func() Dialect { return &codexDialect{sessions: map[string][]*codexCorrelation{}} })
}

// Name returns "codex".
func (d *codexDialect) Name() string { return DialectCodex }

// codexTerminal are the terminal activity words.
var codexTerminal = map[string]bool{
	"completed": true, "complete": true, "interrupted": true, "cancelled": true,
	"errored": true, "error": true, "shutdown": true, "notFound": true,
}

// codexRank ranks Codex status words: terminal 3, running 2, started 1,
// anything else 0.
func codexRank(s string) int {
	switch {
	case codexTerminal[s]:
		return 3
	case s == "running" || s == "inProgress" || s == "in_progress":
		return 2
	case s == "started" || s == "pendingInit":
		return 1
	}
	return 0
}

// Prepare reads the Codex `_meta`, correlates the frame and rewrites its id.
func (d *codexDialect) Prepare(tx *Tx, f *ToolFrame) bool {
	d.cur = nil
	r := f.Read
	codex := r.Map(f.Meta, "codex")
	if codex == nil {
		return true
	}
	in := f.RawInputMap()
	collab := r.Map(codex, "collaboration")
	if sender := r.String(collab, "senderThreadId"); sender != "" {
		if p := d.parentFor(f.SessionID, sender); p != "" {
			f.Parent = p
		}
	}
	if collab != nil && r.String(collab, "tool") == "spawnAgent" {
		child := firstString(r, collab, "receiverThreadIds")
		if child == "" {
			child = firstString(r, in, "receiverThreadIds")
		}
		cf := &codexFrame{prompt: r.String(in, "prompt"), model: r.String(in, "model")}
		states := r.Map(in, "agentsStates")
		st := r.Map(states, child)
		cf.description = r.String(st, "message")
		if cf.description == "" {
			cf.description = cf.prompt
		}
		cf.status = r.String(st, "status")
		if cf.status == "" {
			cf.status = r.String(in, "status")
		}
		corr, ok := d.correlate(tx, f, child, true)
		if !ok {
			return false
		}
		cf.corr = corr
		d.cur = cf
		f.ToolCallID = corr.emitted
		return true
	}
	act := r.Map(codex, "subagent")
	if act == nil {
		return true
	}
	activity := r.String(act, "activity")
	child := r.String(act, "threadId")
	if child == "" {
		child = r.String(in, "agentThreadId")
	}
	p := r.String(act, "path")
	if p == "" {
		p = r.String(in, "agentPath")
	}
	cf := &codexFrame{status: activity}
	if p != "" {
		base := path.Base(strings.TrimRight(p, "/"))
		if base != "." && base != "/" {
			cf.description, cf.subagentType = base, base
		}
	}
	create := !codexTerminal[activity]
	corr, ok := d.correlate(tx, f, child, create)
	if !ok {
		if !create {
			tx.Count(CounterCodexSuppressedTerminal, 1)
		}
		return false
	}
	cf.corr = corr
	d.cur = cf
	f.ToolCallID = corr.emitted
	return true
}

// correlate finds or creates the correlation of (session, wire id, child).
// A wire id reused for another child gets a derived emitted id. A childless
// frame matches the wire id's only correlation; several make it ambiguous.
func (d *codexDialect) correlate(tx *Tx, f *ToolFrame, child string, create bool) (*codexCorrelation, bool) {
	list := d.sessions[f.SessionID]
	wire := f.WireToolCallID
	var sameWire []*codexCorrelation
	for _, c := range list {
		if c.wire == wire {
			if c.child == child {
				return c, true
			}
			sameWire = append(sameWire, c)
		}
	}
	if child == "" && len(sameWire) > 0 {
		if len(sameWire) == 1 {
			return sameWire[0], true
		}
		tx.Count(CounterCodexSuppressedAmbiguous, 1)
		return nil, false
	}
	if !create {
		// Terminal activity: match by child thread alone.
		for _, c := range list {
			if child != "" && c.child == child {
				return c, true
			}
		}
		return nil, false
	}
	emitted := wire
	if len(sameWire) > 0 {
		emitted = fmt.Sprintf("%s~codex-subagent~%d-%s", wire, len(child), base64.RawURLEncoding.EncodeToString([]byte(child)))
		base := emitted
		for n := 2; d.emittedTaken(list, emitted); n++ {
			emitted = fmt.Sprintf("%s~%d", base, n)
		}
	}
	c := &codexCorrelation{wire: wire, child: child, emitted: emitted}
	list = append(list, c)
	if len(list) > MaxCodexCorrelations {
		list = list[1:]
		tx.Count(CounterCodexEvicted, 1)
	}
	d.sessions[f.SessionID] = list
	return c, true
}

func (d *codexDialect) emittedTaken(list []*codexCorrelation, id string) bool {
	for _, c := range list {
		if c.emitted == id {
			return true
		}
	}
	return false
}

// parentFor maps a sender thread to the emitted id of the only correlation
// whose child thread it is.
func (d *codexDialect) parentFor(sessionID, sender string) string {
	var found string
	n := 0
	for _, c := range d.sessions[sessionID] {
		if c.child == sender {
			found = c.emitted
			n++
		}
	}
	if n == 1 {
		return found
	}
	return ""
}

func firstString(r *FieldReader, m map[string]any, key string) string {
	for _, v := range r.Slice(m, key) {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// Recognize makes every correlated Codex frame a subagent.
func (d *codexDialect) Recognize(tx *Tx, c *Card, f *ToolFrame) bool {
	return d.cur != nil
}

// Apply fills the payload from what Prepare read (ranked status).
func (d *codexDialect) Apply(tx *Tx, c *Card, f *ToolFrame) {
	cf := d.cur
	d.cur = nil
	if cf == nil {
		return
	}
	t := c.Task()
	FillString(&t.ChildSessionID, cf.corr.child)
	FillString(&t.Prompt, cf.prompt)
	FillString(&t.Description, cf.description)
	FillString(&t.SubagentType, cf.subagentType)
	FillString(&t.Model, cf.model)
	if cf.status != "" {
		cur := codexRank(t.Status)
		next := codexRank(cf.status)
		if t.Status == "" || (cur < 3 && next >= cur && next > 0) {
			t.Status = cf.status
		}
	}
}

// SessionCleared forgets the correlations of the cleared sessions.
func (d *codexDialect) SessionCleared(tx *Tx, sessionID string) {
	if sessionID == "" {
		d.sessions = map[string][]*codexCorrelation{}
		return
	}
	delete(d.sessions, sessionID)
}
