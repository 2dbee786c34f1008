package cli

import (
	"encoding/json"
	"fmt"
)

// PermissionMode is a session's cursor_permission_mode. Exactly three values
// are accepted; the zero value evaluates as ModeDefault.
type PermissionMode string

// The accepted permission modes.
const (
	// ModeDefault: workspace reads and edits; Cursor rejects shell calls.
	ModeDefault PermissionMode = "default"
	// ModeFullAccess: full command access.
	ModeFullAccess PermissionMode = "full_access"
	// ModePlan: planning only.
	ModePlan PermissionMode = "plan"
)

// PermissionModes lists the advertised modes, in display order.
func PermissionModes() []PermissionMode {
	return []PermissionMode{ModeDefault, ModeFullAccess, ModePlan}
}

// ErrInvalidPermissionMode is returned by ParsePermissionMode for anything
// but the three accepted values, including "auto_review", which is refused on
// purpose: Cursor may then stop for an interactive approval that a headless
// runner cannot give.
type ErrInvalidPermissionMode struct{ Value string }

func (e *ErrInvalidPermissionMode) Error() string {
	if e.Value == "auto_review" {
		return `cursor_permission_mode "auto_review" is not supported: it can wait for an interactive approval the headless runner cannot give`
	}
	return fmt.Sprintf("cursor_permission_mode %q is not one of default, full_access, plan", clipString(e.Value, 64))
}

// ParsePermissionMode validates a mode written through the API: only the
// three accepted values pass; everything else is refused.
func ParsePermissionMode(s string) (PermissionMode, error) {
	switch m := PermissionMode(s); m {
	case ModeDefault, ModeFullAccess, ModePlan:
		return m, nil
	}
	return "", &ErrInvalidPermissionMode{Value: s}
}

// NormalizeStoredMode maps a persisted value to an accepted mode. Legacy or
// unknown values (auto_review, bogus, empty) become ModeDefault and changed
// is true, telling the store to save the normalised value back.
func NormalizeStoredMode(s string) (mode PermissionMode, changed bool) {
	if m, err := ParsePermissionMode(s); err == nil {
		return m, false
	}
	return ModeDefault, true
}

// Valid reports whether m is one of the three accepted modes.
func (m PermissionMode) Valid() bool {
	_, err := ParsePermissionMode(string(m))
	return err == nil
}

// Effective is the mode the runner applies: m itself when valid, otherwise
// ModeDefault (fail safe).
func (m PermissionMode) Effective() PermissionMode {
	if m.Valid() {
		return m
	}
	return ModeDefault
}

// Flags returns the CLI flags for the mode, evaluating unknown values as
// ModeDefault. Plan mode carries --trust as well: without it the CLI refuses
// to run non-interactively in any mode. No --auto-review, --sandbox or
// --approve-mcps is ever emitted.
func (m PermissionMode) Flags() []string {
	switch m.Effective() {
	case ModeFullAccess:
		return []string{"--trust", "--force"}
	case ModePlan:
		return []string{"--trust", "--mode", "plan"}
	default:
		return []string{"--trust"}
	}
}

// UnmarshalJSON loads a stored mode, normalising legacy and unknown values to
// ModeDefault (see NormalizeStoredMode; use SessionState.Load to learn
// whether the value changed and must be saved back).
func (m *PermissionMode) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		*m = ModeDefault
		return nil
	}
	*m, _ = NormalizeStoredMode(s)
	return nil
}

// clipString cuts s to at most n bytes on a rune boundary, marking the cut
// with an ellipsis.
func clipString(s string, n int) string {
	return truncateUTF8(s, n, "…")
}
