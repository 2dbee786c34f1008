package adapter

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// Dialect names. A connection uses exactly one dialect, chosen once.
const (
	DialectCursor   = "cursor"
	DialectClaude   = "claude"
	DialectCodex    = "codex"
	DialectOpenCode = "opencode"
	DialectAuggie   = "auggie"
	DialectCopilot  = "copilot"
	DialectGemini   = "gemini"
	DialectQwen     = "qwen"
	DialectGeneric  = "generic"
)

// Dialect is one agent's way of reporting subagents. The Tracker runs the
// pipeline common to all agents (recognition rules R1–R5, rawInput and
// rawOutput reads, nesting, merge classes, monotonic status, the completed
// set) and calls the dialect at fixed points. Every method is called with
// the Tracker's lock held, so a dialect needs no locking of its own for
// state it touches only from these methods, and must not call back into
// the Tracker except through the Tx it is given.
//
// A dialect instance serves one connection: the registry hands out a fresh
// one per Tracker. Embed Base to implement only the hooks you need.
type Dialect interface {
	// Name is the dialect's registry name.
	Name() string
	// Traits are fixed per dialect.
	Traits() Traits
	// Prepare sees every tool frame first. It may rewrite f.ToolCallID
	// (Codex derives ids for reused wire ids), set f.Parent, or return
	// false to suppress the frame (counted "frames_suppressed").
	Prepare(tx *Tx, f *ToolFrame) bool
	// Recognize runs on a card that is not yet a subagent, before the
	// common rules. Returning true makes it a subagent (the Tracker then
	// creates its SubagentTask); the dialect may fill fields in Apply.
	Recognize(tx *Tx, c *Card, f *ToolFrame) bool
	// Apply runs for every frame on a subagent card, after the common
	// merges and before the frame's status is applied. Dialect-specific
	// results go here (Claude's toolResponse, Cursor's isBackground and
	// pending metadata). It may raise the status with Card.SetStatus.
	Apply(tx *Tx, c *Card, f *ToolFrame)
	// HandleUpdate receives every session update that is not a tool_call
	// or tool_call_update. It reports whether it consumed the update.
	HandleUpdate(tx *Tx, n *acp.SessionNotification) bool
	// PromptEnded runs after the Tracker swept the session's completed set
	// at the end of a prompt turn.
	PromptEnded(tx *Tx, sessionID string)
	// SessionCleared runs when a session's state is dropped (ended,
	// closed, replaced, loaded); sessionID "" means every session.
	SessionCleared(tx *Tx, sessionID string)
}

// ChildTexter is implemented by a dialect whose agent sends a running
// subagent's text as the parent's own agent_message_chunk (Copilot). The
// Tracker's ChildText asks it, with the lock held.
type ChildTexter interface {
	// ChildText reports whether agent text arriving now in sessionID is a
	// running subagent's rather than the session's own, and the card's
	// tool call id when exactly one subagent can be speaking ("" when
	// several could).
	ChildText(tx *Tx, sessionID string) (toolCallID string, child bool)
}

// ChildUpdateTexter is implemented by a dialect whose agent sends a
// running subagent's text on the parent's session tagged with the child
// (Qwen Code's _meta.parentToolCallId): it judges one update by its own
// fields. The Tracker's ChildMessage asks it first, with the lock held.
type ChildUpdateTexter interface {
	// ChildUpdateText reports whether the agent_message_chunk or
	// agent_thought_chunk n is a subagent's rather than its session's own,
	// and the launching card's tool call id when the update names it.
	ChildUpdateText(tx *Tx, n *acp.SessionNotification) (toolCallID string, child bool)
}

// ChildTextHolder is implemented by a dialect whose agent may send a
// background subagent's text as the parent's own agent_message_chunk,
// untagged, at a moment nothing on the wire tells it from the parent's
// (Copilot). A consumer that shows agent text holds it while HoldText says
// so and has the held chunks judged (Tracker.HeldChildText) once it
// releases them. The Tracker asks it with the lock held.
type ChildTextHolder interface {
	// HoldText reports whether agent text arriving now in sessionID may be
	// a background subagent's whose answer is not known yet.
	HoldText(tx *Tx, sessionID string) bool
	// ChildAnswers returns the background subagents' answers the dialect
	// learned in sessionID, oldest first.
	ChildAnswers(tx *Tx, sessionID string) []ChildAnswer
}

// ChildAnswer is one answer of a subagent, as its card holds it.
type ChildAnswer struct {
	// ToolCallID is the subagent card's tool call id.
	ToolCallID string
	// Text is the answer's text.
	Text string
}

// Traits are the fixed properties of a dialect.
type Traits struct {
	// BackgroundWork adds Payload.BackgroundWork to subagent payloads
	// (Claude and the mock agent only).
	BackgroundWork bool
}

// Base implements every Dialect hook as a no-op. Embed it and override what
// the dialect needs; Name must still be provided.
type Base struct{}

// Traits returns the zero Traits.
func (Base) Traits() Traits { return Traits{} }

// Prepare keeps every frame unchanged.
func (Base) Prepare(*Tx, *ToolFrame) bool { return true }

// Recognize recognises nothing beyond the common rules.
func (Base) Recognize(*Tx, *Card, *ToolFrame) bool { return false }

// Apply adds nothing to the common merges.
func (Base) Apply(*Tx, *Card, *ToolFrame) {}

// HandleUpdate consumes nothing.
func (Base) HandleUpdate(*Tx, *acp.SessionNotification) bool { return false }

// PromptEnded does nothing.
func (Base) PromptEnded(*Tx, string) {}

// SessionCleared does nothing.
func (Base) SessionCleared(*Tx, string) {}

// ToolFrame is a tool_call or tool_call_update, normalised into one shape.
// The untyped values are already passed through DecodeUntyped.
type ToolFrame struct {
	// SessionID is the notification's session.
	SessionID string
	// ToolCallID is the card key; Prepare may rewrite it.
	ToolCallID string
	// WireToolCallID is the id as sent, never rewritten.
	WireToolCallID string
	// Create is true for tool_call, false for tool_call_update.
	Create bool
	// Title is the frame's title; nil when absent (or empty on tool_call).
	Title *string
	// Status is the ACP status as sent; "" when absent.
	Status string
	// Kind is the ACP tool kind; "" when absent.
	Kind string
	// RawInput is the frame's rawInput, untyped (nil when absent).
	RawInput any
	// RawOutput is the frame's rawOutput, untyped (nil when absent).
	RawOutput any
	// Meta is the frame's _meta object (nil when absent).
	Meta map[string]any
	// Content is the frame's content (nil when absent).
	Content []acp.ToolCallContent
	// HasLocations reports a non-empty locations list.
	HasLocations bool
	// Parent, when set by Prepare, is the parent tool call id to use.
	Parent string
	// Read reads the untyped values and counts bad fields.
	Read *FieldReader
}

// RawInputMap returns rawInput when it is an object.
func (f *ToolFrame) RawInputMap() map[string]any { return AsMap(f.RawInput) }

// RawOutputMap returns rawOutput when it is an object (strings and arrays,
// as Claude sends, give nil).
func (f *ToolFrame) RawOutputMap() map[string]any { return AsMap(f.RawOutput) }

// carriesContent reports a frame that, without a status, still shows the
// tool is running: it has a title, rawInput, content or locations.
func (f *ToolFrame) carriesContent() bool {
	return f.Title != nil || f.RawInput != nil || len(f.Content) > 0 || f.HasLocations
}

// Factory makes a fresh dialect for one connection.
type Factory func() Dialect

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a dialect available by name. Packages register their
// dialect in init; registering a name twice replaces the earlier factory.
// The adapter package registers codex, opencode, auggie, copilot, gemini,
// qwen and generic; import adapter/claude and adapter/cursor for theirs.
func Register(name string, f Factory) {
	if name == "" || f == nil {
		panic("adapter: Register needs a name and a factory")
	}
	registryMu.Lock()
	registry[name] = f
	registryMu.Unlock()
}

// Registered lists the registered dialect names, sorted.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NewDialect returns a fresh dialect registered under name.
func NewDialect(name string) (Dialect, error) {
	registryMu.RLock()
	f := registry[name]
	registryMu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("adapter: no dialect registered as %q (registered: %s)", name, strings.Join(Registered(), ", "))
	}
	return f(), nil
}

// agentNameRules map an initialize agentInfo.name to a dialect name: the
// first rule whose needle occurs in the lowercased name wins.
var agentNameRules = []struct{ needle, dialect string }{
	{"cursor", DialectCursor},
	{"claude", DialectClaude},
	{"mock-agent", DialectClaude}, // the test double speaks Claude's legacy form
	{"codex", DialectCodex},
	{"opencode", DialectOpenCode},
	{"auggie", DialectAuggie},
	{"augment", DialectAuggie},
	{"copilot", DialectCopilot},
	{"gemini", DialectGemini},
	{"qwen", DialectQwen},
}

// DialectForAgent returns the dialect name for an initialize agentInfo.name
// (generic when nothing matches). Exact dialect names match themselves.
func DialectForAgent(agentName string) string {
	n := strings.ToLower(strings.TrimSpace(agentName))
	for _, r := range agentNameRules {
		if strings.Contains(n, r.needle) {
			return r.dialect
		}
	}
	return DialectGeneric
}

// SelectDialect applies the selection order: the explicit name when set,
// else the dialect for agentName, else generic. A name derived from
// agentName whose dialect is not registered falls back to generic; an
// explicit name must be registered.
func SelectDialect(explicit, agentName string) (Dialect, error) {
	if explicit != "" {
		return NewDialect(explicit)
	}
	if d, err := NewDialect(DialectForAgent(agentName)); err == nil {
		return d, nil
	}
	return NewDialect(DialectGeneric)
}
