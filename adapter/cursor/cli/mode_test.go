package cli

import (
	"errors"
	"slices"
	"testing"
)

// docs/cursor-cli.md#scenario-7.
func TestPermissionModeFlags(t *testing.T) {
	cases := map[PermissionMode][]string{
		ModeDefault:    {"--trust"},
		ModeFullAccess: {"--trust", "--force"},
		ModePlan:       {"--trust", "--mode", "plan"},
		"":             {"--trust"},
		"auto_review":  {"--trust"},
		"YOLO":         {"--trust"},
	}
	for m, want := range cases {
		if got := m.Flags(); !slices.Equal(got, want) {
			t.Errorf("%q.Flags() = %v, want %v", m, got, want)
		}
	}
	if !slices.Equal(PermissionModes(), []PermissionMode{ModeDefault, ModeFullAccess, ModePlan}) {
		t.Fatal("advertised modes changed")
	}
}

// docs/cursor-cli.md#scenario-8.
func TestPermissionModeNormalisation(t *testing.T) {
	for _, stored := range []string{"auto_review", "bogus", ""} {
		m, changed := NormalizeStoredMode(stored)
		if m != ModeDefault || !changed {
			t.Errorf("stored %q -> %q changed=%t", stored, m, changed)
		}
		st, normalized, err := LoadSessionState([]byte(`{"cursor_permission_mode":"` + stored + `","cursor_session_id":"abc"}`))
		if err != nil || st.PermissionMode != ModeDefault || !normalized || st.CursorSessionID != "abc" {
			t.Errorf("load %q: %+v normalized=%t err=%v", stored, st, normalized, err)
		}
	}
	st, normalized, _ := LoadSessionState([]byte(`{"cursor_permission_mode":"plan"}`))
	if st.PermissionMode != ModePlan || normalized {
		t.Errorf("valid mode changed: %+v %t", st, normalized)
	}
	_, normalized, _ = LoadSessionState([]byte(`{"cursor_permission_mode":"plan","cursor_session_id":"-bad"}`))
	if !normalized {
		t.Error("invalid stored session id kept")
	}
	var pm PermissionMode
	if err := pm.UnmarshalJSON([]byte(`"auto_review"`)); err != nil || pm != ModeDefault {
		t.Errorf("UnmarshalJSON = %q %v", pm, err)
	}
	for _, write := range []string{"auto_review", "bogus", "DEFAULT"} {
		var inv *ErrInvalidPermissionMode
		if _, err := ParsePermissionMode(write); !errors.As(err, &inv) {
			t.Errorf("API write %q accepted", write)
		}
	}
	if m, err := ParsePermissionMode("full_access"); err != nil || m != ModeFullAccess {
		t.Errorf("full_access refused: %v", err)
	}
}

func TestValidSessionID(t *testing.T) {
	for id, ok := range map[string]bool{
		sid: true, "a": true, "A1._:-": true, "": false, "-rf": false, ".x": false,
		string(make([]byte, 300)): false, "a b": false, "a\nb": false,
	} {
		if ValidSessionID(id) != ok {
			t.Errorf("ValidSessionID(%.20q) != %t", id, ok)
		}
	}
	long := "a"
	for len(long) < 256 {
		long += "b"
	}
	if !ValidSessionID(long) || ValidSessionID(long+"c") {
		t.Error("length bound is not 256")
	}
}

func TestEnvelope(t *testing.T) {
	p := SessionState{}.PlanTurn(Instructions{Prelude: "PRE", SystemPrompt: "SYS"}, "-rf hello")
	if p.Envelope[0] == '-' || UserText(p.Envelope) != "-rf hello" {
		t.Fatalf("envelope = %q", p.Envelope)
	}
	if !p.InjectedStable || p.InjectedMemory {
		t.Fatalf("plan = %+v", p)
	}
	if UserText("plain") != "plain" {
		t.Fatal("UserText changed a non-envelope")
	}
}
