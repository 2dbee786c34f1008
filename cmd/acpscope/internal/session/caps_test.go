package session

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// Objects merge member by member, other values replace, null removes; the
// result is the declaration the SDK's type holds, `_meta` verbatim.
func TestDeclaredCapabilities(t *testing.T) {
	base := acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true}, Subagents: &acp.SubagentCapabilities{}}
	for _, tc := range []struct{ over, exact, want string }{
		{over: string(Profiles["jetbrains-air"]), want: `{"_meta":{"jetbrains":{"air":{"capabilities":["nativeSubagentSessions","backgroundSubagents","asyncTasks"],"version":1}}},"fs":{"readTextFile":true},"subagents":{}}`},
		{over: `{"subagents":null,"fs":{"writeTextFile":true}}`, want: `{"fs":{"readTextFile":true,"writeTextFile":true}}`},
		{exact: `{"_meta":{"x":1}}`, want: `{"_meta":{"x":1}}`},
	} {
		cfg := Config{ClientCapabilities: json.RawMessage(tc.over)}
		if tc.exact != "" {
			cfg = Config{ClientCapabilities: json.RawMessage(tc.exact), ExactCapabilities: true}
		}
		caps, err := declaredCapabilities(cfg, base)
		if err != nil {
			t.Fatal(err)
		}
		var w acp.ClientCapabilities
		if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
			t.Fatal(err)
		}
		got, want := mustJSON(t, caps), mustJSON(t, w)
		if string(got) != string(want) {
			t.Errorf("%s%s:\n got %s\nwant %s", tc.over, tc.exact, got, want)
		}
	}
	for _, bad := range []string{`[]`, `"x"`, `{`, `{} {}`} {
		if _, err := declaredCapabilities(Config{ClientCapabilities: json.RawMessage(bad)}, base); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzMergeCapabilities: any two inputs (a capture's recorded
// declaration, a flag) merge or fail, never panic, and a merge is JSON.
func FuzzMergeCapabilities(f *testing.F) {
	f.Add([]byte(`{"fs":{"readTextFile":true}}`), []byte(string(Profiles["jetbrains-air"])))
	f.Add([]byte(`{"_meta":null}`), []byte(`{"_meta":{"a":[1,{"b":null}]}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		out, err := MergeCapabilities(a, b)
		if err == nil && !json.Valid(out) {
			t.Fatalf("merge of %q and %q is not JSON: %q", a, b, out)
		}
		_, _ = declaredCapabilities(Config{ClientCapabilities: b, ExactCapabilities: len(a)%2 == 0}, acp.ClientCapabilities{})
	})
}
