package cursor

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

func TestParseTaskParams(t *testing.T) {
	cases := []struct {
		name   string
		params string
		ok     bool
		want   TaskParams
	}{
		{name: "capture", ok: true,
			params: `{"agentId":"eaa12f70-1","description":"Summarize src JS files","durationMs":812,"model":"composer-2.5-fast","prompt":"Read every .js file under src/ and summarize","subagentType":{"custom":{"unspecified":{}}},"toolCallId":"tool_2494c23d-1"}`,
			want: TaskParams{ToolCallID: "tool_2494c23d-1", AgentID: "eaa12f70-1", Description: "Summarize src JS files",
				Prompt: "Read every .js file under src/ and summarize", Model: "composer-2.5-fast"}},
		{name: "wrong types ignored field by field", ok: true,
			params: `{"toolCallId":"t6","description":42,"prompt":"ok","model":null,"agentId":["x"]}`,
			want:   TaskParams{ToolCallID: "t6", Prompt: "ok"}},
		{name: "subagentType string is still not read", ok: true,
			params: `{"toolCallId":"t1","subagentType":"explore"}`,
			want:   TaskParams{ToolCallID: "t1"}},
		{name: "missing model, present prompt", ok: true,
			params: `{"toolCallId":"t1","prompt":"p"}`,
			want:   TaskParams{ToolCallID: "t1", Prompt: "p"}},
		{name: "whitespace around", ok: true,
			params: " \n{\"toolCallId\" : \"t1\" , \"model\":\"m\"}\n",
			want:   TaskParams{ToolCallID: "t1", Model: "m"}},
		{name: "escaped strings", ok: true,
			params: `{"toolCallId":"t\u0031","prompt":"a\nb\"c"}`,
			want:   TaskParams{ToolCallID: "t1", Prompt: "a\nb\"c"}},
		{name: "empty raw", params: ``},
		{name: "invalid JSON", params: `{"toolCallId":"t1"`},
		{name: "trailing garbage", params: `{"toolCallId":"t1"}x`},
		{name: "null", params: `null`},
		{name: "array", params: `[{"toolCallId":"t1"}]`},
		{name: "string", params: `"x"`},
		{name: "empty object", params: `{}`},
		{name: "empty id", params: `{"toolCallId":"","prompt":"p"}`},
		{name: "numeric id", params: `{"toolCallId":7,"prompt":"p"}`},
		{name: "null id", params: `{"toolCallId":null,"prompt":"p"}`},
		{name: "object id", params: `{"toolCallId":{"id":"t1"},"prompt":"p"}`},
		{name: "oversized id", params: `{"toolCallId":"` + strings.Repeat("x", MaxToolCallIDBytes+1) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseTaskParams(json.RawMessage(tc.params))
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseTaskParams(%s) = %+v, %v; want %+v, %v", tc.params, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseTaskParamsCaps(t *testing.T) {
	id := strings.Repeat("i", MaxToolCallIDBytes)
	// "é" is two bytes, so an odd cap falls inside a rune.
	longPrompt := strings.Repeat("é", MaxPromptBytes)
	longModel := strings.Repeat("m", MaxFieldBytes+10)
	raw, _ := json.Marshal(map[string]any{"toolCallId": id, "prompt": longPrompt, "model": longModel, "description": "d"})
	got, ok := ParseTaskParams(raw)
	if !ok {
		t.Fatal("not ok")
	}
	if got.ToolCallID != id {
		t.Fatal("id at the cap must be kept verbatim")
	}
	if len(got.Prompt) > MaxPromptBytes || !utf8.ValidString(got.Prompt) || !strings.HasPrefix(longPrompt, got.Prompt) {
		t.Fatalf("prompt not cut on a rune boundary: len %d", len(got.Prompt))
	}
	if len(got.Prompt) != MaxPromptBytes {
		t.Fatalf("prompt len %d, want %d (even cap, two-byte runes)", len(got.Prompt), MaxPromptBytes)
	}
	if got.Model != longModel[:MaxFieldBytes] {
		t.Fatalf("model len %d", len(got.Model))
	}
	if got.Description != "d" || got.Truncated != 2 {
		t.Fatalf("description %q truncated %d", got.Description, got.Truncated)
	}
}

func TestTruncateUTF8(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"},
		{"€x", 1, ""},
		{"€x", 2, ""},
		{"€x", 3, "€"},
		{"abc", 0, ""},
	}
	for _, tc := range cases {
		if got := adapter.TruncateUTF8(tc.in, tc.limit); got != tc.want {
			t.Errorf("TruncateUTF8(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

// FuzzParseTaskParams checks that any params either yield a usable tool
// call id within the caps or are rejected, and never panic.
func FuzzParseTaskParams(f *testing.F) {
	for _, seed := range []string{
		`{"agentId":"a","description":"d","durationMs":812,"model":"composer-2.5-fast","prompt":"p","subagentType":{"custom":{"unspecified":{}}},"toolCallId":"tool_1"}`,
		`{"toolCallId":"t6","description":42,"prompt":"ok","model":null}`,
		`null`, `[]`, `"x"`, `{}`, `{"toolCallId":7}`, `{"toolCallId":""}`,
		`{"toolCallId":"t","prompt":"\ud800"}`, "{\"toolCallId\":\"t\",\"prompt\":\"\xff\"}",
		`{"toolCallId":"t","toolCallId":"u"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, ok := ParseTaskParams(raw)
		if !ok {
			if p != (TaskParams{}) {
				t.Fatalf("rejected params returned %+v", p)
			}
			return
		}
		if p.ToolCallID == "" || len(p.ToolCallID) > MaxToolCallIDBytes {
			t.Fatalf("bad id accepted: %q", p.ToolCallID)
		}
		if len(p.Prompt) > MaxPromptBytes || len(p.Description) > MaxFieldBytes ||
			len(p.Model) > MaxFieldBytes || len(p.AgentID) > MaxFieldBytes {
			t.Fatalf("cap exceeded: %+v", p)
		}
		for _, s := range []string{p.ToolCallID, p.AgentID, p.Description, p.Prompt, p.Model} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 kept: %q", s)
			}
		}
		// Parsing is a pure function of the input.
		if again, ok2 := ParseTaskParams(raw); !ok2 || again != p {
			t.Fatalf("not deterministic: %+v vs %+v", p, again)
		}
	})
}
