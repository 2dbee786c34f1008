package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// sessionIDPattern is the provider session id contract: alphanumeric first
// (so it never reads as a flag), then up to 255 of [A-Za-z0-9._:-].
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$`)

// ValidSessionID reports whether id may be persisted and passed to --resume.
func ValidSessionID(id string) bool { return sessionIDPattern.MatchString(id) }

// MaxForkMemoryBytes bounds the memory a fork carries into its first turn.
const MaxForkMemoryBytes = 64 << 10

// Instructions are the stable parts of the prompt envelope.
type Instructions struct {
	// Prelude is the server's stable provider prelude; DefaultPrelude when
	// empty.
	Prelude string
	// SystemPrompt is the session's system prompt, possibly empty.
	SystemPrompt string
}

// DefaultPrelude opens every envelope that carries the stable parts.
const DefaultPrelude = "The sections below were composed by the host application. " +
	"Cursor print mode offers no separate system channel, so host instructions and the " +
	"user's message travel together in this one message; the section headers mark " +
	"which part is which. Follow the system section, then answer the user section."

// Hash returns the instruction hash committed after a successful turn.
func (in Instructions) Hash() string {
	p := in.Prelude
	if p == "" {
		p = DefaultPrelude
	}
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(p))))
	h.Write([]byte{0})
	h.Write([]byte(p))
	h.Write([]byte{0})
	h.Write([]byte(in.SystemPrompt))
	return hex.EncodeToString(h.Sum(nil))
}

// Envelope section markers. The envelope always starts with envelopeHeader,
// so a positional prompt can never begin with "-".
const (
	envelopeHeader = "[acp-cursor envelope v1]"
	sectionPrelude = "[section: prelude]"
	sectionSystem  = "[section: system]"
	sectionMemory  = "[section: fork memory]"
	sectionUser    = "[section: user]"
)

// SessionState is what a session persists for the Cursor backend. It holds
// no secrets beyond the fork memory, and never the composed envelope.
type SessionState struct {
	// CursorSessionID is the provider session id, recorded from a valid
	// system/init even when that turn later failed. Empty: next turn is a
	// first turn.
	CursorSessionID string `json:"cursor_session_id,omitempty"`
	// PermissionMode is cursor_permission_mode; loading normalises legacy
	// and unknown values to default.
	PermissionMode PermissionMode `json:"cursor_permission_mode"`
	// InstructionHash is the hash of the stable instructions, committed only
	// after a successful turn.
	InstructionHash string `json:"instruction_hash,omitempty"`
	// ForkMemory is the bounded memory a fork injects once; consumed only by
	// a successful turn.
	ForkMemory         string `json:"fork_memory,omitempty"`
	ForkMemoryConsumed bool   `json:"fork_memory_consumed,omitempty"`
}

// LoadSessionState decodes a stored state. A legacy or unknown permission
// mode is normalised to default, and normalized is true so the store saves
// the state back; an invalid stored session id is dropped the same way (the
// next turn starts fresh instead of passing it to --resume).
func LoadSessionState(data []byte) (st SessionState, normalized bool, err error) {
	var raw struct {
		CursorSessionID    string          `json:"cursor_session_id"`
		PermissionMode     json.RawMessage `json:"cursor_permission_mode"`
		InstructionHash    string          `json:"instruction_hash"`
		ForkMemory         string          `json:"fork_memory"`
		ForkMemoryConsumed bool            `json:"fork_memory_consumed"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return SessionState{}, false, err
	}
	var stored string
	if json.Unmarshal(raw.PermissionMode, &stored) != nil {
		stored = ""
	}
	st = SessionState{
		CursorSessionID:    raw.CursorSessionID,
		InstructionHash:    raw.InstructionHash,
		ForkMemory:         raw.ForkMemory,
		ForkMemoryConsumed: raw.ForkMemoryConsumed,
	}
	st.PermissionMode, normalized = NormalizeStoredMode(stored)
	if st.CursorSessionID != "" && !ValidSessionID(st.CursorSessionID) {
		st.CursorSessionID, normalized = "", true
	}
	return st, normalized, nil
}

// Fork returns the state of a fork: it keeps the permission mode, never the
// provider session id or instruction hash, and carries memory (bounded to
// MaxForkMemoryBytes) into its first successful turn.
func (s SessionState) Fork(memory string) SessionState {
	return SessionState{
		PermissionMode: s.PermissionMode.Effective(),
		ForkMemory:     truncateUTF8(memory, MaxForkMemoryBytes, "\n[fork memory truncated]"),
	}
}

// Standalone returns the isolated state of a scheduled or manual job run
// with provider_context_mode "standalone": nothing of the parent (provider
// id, instruction hash, memory) is shared.
func Standalone(mode PermissionMode) SessionState {
	return SessionState{PermissionMode: mode.Effective()}
}

// TurnPlan is one turn prepared from a SessionState: what to send and what
// to commit if the turn succeeds. Its Envelope is secret: it is spawned but
// never logged or persisted (argv records show a placeholder).
type TurnPlan struct {
	// ResumeID is passed to --resume; empty for a first turn.
	ResumeID string
	// Mode is the effective permission mode.
	Mode PermissionMode
	// Envelope is the composed prompt: prelude, system prompt, fork memory
	// once, user prompt, each under its section header.
	Envelope string
	// InstructionHash is committed on success.
	InstructionHash string
	// InjectedStable and InjectedMemory say which optional parts the
	// envelope carries.
	InjectedStable bool
	InjectedMemory bool

	secrets []string
}

// PlanTurn prepares the next turn. The stable parts are omitted only on an
// ordinary resume whose committed hash matches; fork memory is injected
// until a successful turn consumes it.
func (s SessionState) PlanTurn(in Instructions, userPrompt string) TurnPlan {
	p := TurnPlan{Mode: s.PermissionMode.Effective(), InstructionHash: in.Hash()}
	if ValidSessionID(s.CursorSessionID) {
		p.ResumeID = s.CursorSessionID
	}
	p.InjectedStable = p.ResumeID == "" || s.InstructionHash != p.InstructionHash
	p.InjectedMemory = s.ForkMemory != "" && !s.ForkMemoryConsumed
	prelude := in.Prelude
	if prelude == "" {
		prelude = DefaultPrelude
	}
	var b strings.Builder
	b.WriteString(envelopeHeader)
	b.WriteByte('\n')
	section := func(h, body string) {
		b.WriteString(h)
		b.WriteByte('\n')
		b.WriteString(body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteByte('\n')
		}
	}
	if p.InjectedStable {
		section(sectionPrelude, prelude)
		p.secrets = append(p.secrets, prelude)
		if in.SystemPrompt != "" {
			section(sectionSystem, in.SystemPrompt)
			p.secrets = append(p.secrets, in.SystemPrompt)
		}
	}
	if p.InjectedMemory {
		section(sectionMemory, s.ForkMemory)
		p.secrets = append(p.secrets, s.ForkMemory)
	}
	b.WriteString(sectionUser)
	b.WriteByte('\n')
	b.WriteString(userPrompt)
	p.secrets = append(p.secrets, userPrompt)
	p.Envelope = b.String()
	return p
}

// RecordSessionID stores a provider session id reported by a valid init; it
// is called for every such init, even when the turn later fails. Invalid ids
// are ignored. changed reports a different id than the stored one.
func (s *SessionState) RecordSessionID(id string) (changed bool) {
	if !ValidSessionID(id) {
		return false
	}
	changed = s.CursorSessionID != "" && s.CursorSessionID != id
	s.CursorSessionID = id
	return changed
}

// Commit applies a finished turn: the session id is recorded whenever the
// turn saw a valid init; the instruction hash and the memory consumption
// only after a successful result.
func (s *SessionState) Commit(p TurnPlan, r Result) {
	if r.SessionID != "" {
		s.RecordSessionID(r.SessionID)
	}
	if !r.Success() {
		return
	}
	s.InstructionHash = p.InstructionHash
	if p.InjectedMemory {
		s.ForkMemoryConsumed = true
		s.ForkMemory = ""
	}
}

// UserText returns the user's words from an envelope (for previews and
// imports), or text unchanged when it is not an envelope.
func UserText(text string) string {
	if !strings.HasPrefix(text, envelopeHeader+"\n") {
		return text
	}
	if i := strings.Index(text, "\n"+sectionUser+"\n"); i >= 0 {
		return text[i+len(sectionUser)+2:]
	}
	return text
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary, appending
// marker when it cut.
func truncateUTF8(s string, n int, marker string) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + marker
}
