package stream

import (
	"bytes"
	"strings"
	"testing"
)

const sid = "0b7e52d4-1c1e-4c57-9a55-3f0c2a9d7e10"

// fixtures are the observed event shapes (ids and values synthetic), one
// per known type/subtype.
var fixtures = map[string]Kind{
	`{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/srv/ws/demo","session_id":"` + sid + `","model":"Auto","permissionMode":"default"}`:                                                    KindInit,
	`{"type":"system","subtype":"task_notification","session_id":"` + sid + `"}`:                                                                                                                             KindSystemNote,
	`{"type":"system","subtype":"background_shell_timeout","aborted_count":1,"timeout_ms":30000,"session_id":"` + sid + `"}`:                                                                                 KindSystemNote,
	`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"<envelope>"}]},"session_id":"` + sid + `"}`:                                                                                   KindUserEcho,
	`{"type":"thinking","subtype":"delta","text":"Checking main.go","session_id":"` + sid + `","timestamp_ms":1787000000000}`:                                                                                KindThinkingDelta,
	`{"type":"thinking","subtype":"completed","session_id":"` + sid + `","timestamp_ms":1787000000400}`:                                                                                                      KindThinkingCompleted,
	`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"main.go prints a greeting."}]},"session_id":"` + sid + `"}`:                                                         KindAssistant,
	`{"type":"tool_call","subtype":"started","call_id":"call-1","tool_call":{"readToolCall":{"args":{"path":"main.go"}}},"session_id":"` + sid + `"}`:                                                        KindToolStarted,
	`{"type":"tool_call","subtype":"completed","call_id":"call-1","tool_call":{"readToolCall":{"args":{"path":"main.go"},"result":{"success":{"content":"x","totalLines":40}}}},"session_id":"` + sid + `"}`: KindToolCompleted,
	`{"type":"interaction_query","subtype":"request","session_id":"` + sid + `"}`:                                                                                                                            KindInteractionRequest,
	`{"type":"interaction_query","subtype":"response","session_id":"` + sid + `"}`:                                                                                                                           KindInteractionResponse,
	`{"type":"retry","subtype":"starting","attempt":2,"session_id":"` + sid + `"}`:                                                                                                                           KindRetry,
	`{"type":"connection","subtype":"reconnected","attempt":1,"session_id":"` + sid + `"}`:                                                                                                                   KindConnection,
	`{"type":"result","subtype":"success","is_error":false,"duration_ms":4889,"result":"done","session_id":"` + sid + `"}`:                                                                                   KindResult,
	`{"type":"system","subtype":"brand_new","session_id":"` + sid + `"}`:                                                                                                                                     KindIgnored,
	`{"type":"thinking","subtype":"redacted","session_id":"` + sid + `"}`:                                                                                                                                    KindIgnored,
}

func TestParseFixtures(t *testing.T) {
	for line, want := range fixtures {
		ev, err := Parse([]byte(line))
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if ev.Kind != want {
			t.Errorf("%s: kind %v, want %v", line, ev.Kind, want)
		}
	}
}

func TestParseFields(t *testing.T) {
	ev, err := Parse([]byte(`{"type":"result","subtype":"success","is_error":false,"duration_ms":4889,"duration_api_ms":4702,"result":"ok","request_id":"req-1","usage":{"inputTokens":14948,"outputTokens":103}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := ev.Result
	if r.Text != "ok" || *r.DurationMs != 4889 || r.RequestID != "req-1" || *r.Usage.InputTokens != 14948 || r.Usage.CacheReadTokens != nil {
		t.Fatalf("result = %+v usage %+v", r, r.Usage)
	}
	ev, err = Parse([]byte(`{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"shellToolCall":{"args":{"command":"go test","timeout":120000,"isBackground":true}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if tc := ev.Tool; tc.Name != "shell" || tc.ShellTimeoutMs != 120000 || !tc.Background {
		t.Fatalf("tool = %+v", tc)
	}
	ev, err = Parse([]byte(`{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"function":{"name":"WebFetch","arguments":"{\"url\":\"x\"}"}}}`))
	if err != nil || ev.Tool.Name != "WebFetch" {
		t.Fatalf("function form: %+v %v", ev.Tool, err)
	}
	// A 2026.01 capture shows a newline inside call_id: accepted.
	if _, err := Parse([]byte(`{"type":"tool_call","subtype":"started","call_id":"a\nb","tool_call":{"lsToolCall":{}}}`)); err != nil {
		t.Fatal(err)
	}
}

// docs/cursor-cli.md#scenario-16 (parser): unknown fields and any *ToolCall key are accepted;
// zero, two or unknown outcome keys are schema errors.
func TestParseToolOutcomes(t *testing.T) {
	ok := `{"type":"tool_call","subtype":"completed","call_id":"g","extra":[1,2],"tool_call":{"grepToolCall":{"result":{"success":{"matches":1}}}}}`
	if ev, err := Parse([]byte(ok)); err != nil || ev.Tool.Name != "grep" || ev.Tool.OutcomeClass != OutcomeSuccess {
		t.Fatalf("grep: %+v %v", ev.Tool, err)
	}
	for key, class := range outcomeKeys {
		line := `{"type":"tool_call","subtype":"completed","call_id":"g","tool_call":{"editToolCall":{"result":{"` + key + `":{}}}}}`
		if ev, err := Parse([]byte(line)); err != nil || ev.Tool.OutcomeClass != class {
			t.Errorf("%s: %+v %v", key, ev.Tool, err)
		}
	}
	for name, line := range map[string]string{
		"zero keys":         `{"type":"tool_call","subtype":"completed","call_id":"g","tool_call":{"grepToolCall":{"result":{}}}}`,
		"two keys":          `{"type":"tool_call","subtype":"completed","call_id":"g","tool_call":{"grepToolCall":{"result":{"success":{},"error":{}}}}}`,
		"unknown key":       `{"type":"tool_call","subtype":"completed","call_id":"g","tool_call":{"grepToolCall":{"result":{"maybe":{}}}}}`,
		"no result":         `{"type":"tool_call","subtype":"completed","call_id":"g","tool_call":{"grepToolCall":{}}}`,
		"rejected string":   `{"type":"tool_call","subtype":"completed","call_id":"g","tool_call":{"shellToolCall":{"result":{"rejected":"no"}}}}`,
		"two tools":         `{"type":"tool_call","subtype":"started","call_id":"g","tool_call":{"aToolCall":{},"bToolCall":{}}}`,
		"no call id":        `{"type":"tool_call","subtype":"started","tool_call":{"aToolCall":{}}}`,
		"long call id":      `{"type":"tool_call","subtype":"started","call_id":"` + strings.Repeat("x", 241) + `","tool_call":{"aToolCall":{}}}`,
		"unknown subtype":   `{"type":"tool_call","subtype":"paused","call_id":"g","tool_call":{"aToolCall":{}}}`,
		"tool not object":   `{"type":"tool_call","subtype":"started","call_id":"g","tool_call":{"aToolCall":1}}`,
		"tool_call missing": `{"type":"tool_call","subtype":"started","call_id":"g"}`,
	} {
		if _, err := Parse([]byte(line)); !IsSchemaError(err) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// docs/cursor-cli.md#scenario-17.
func TestParseResultValidation(t *testing.T) {
	for name, line := range map[string]string{
		"is_error missing":  `{"type":"result","subtype":"success","result":"x"}`,
		"is_error string":   `{"type":"result","subtype":"success","is_error":"false","result":"x"}`,
		"subtype mismatch":  `{"type":"result","subtype":"success","is_error":true,"result":"x"}`,
		"error but false":   `{"type":"result","subtype":"error","is_error":false,"result":"x"}`,
		"numeric result":    `{"type":"result","subtype":"success","is_error":false,"result":42}`,
		"missing result":    `{"type":"result","subtype":"success","is_error":false}`,
		"unknown subtype":   `{"type":"result","subtype":"partial","is_error":false,"result":"x"}`,
		"unknown type":      `{"type":"mystery"}`,
		"no type":           `{"subtype":"init"}`,
		"numeric type":      `{"type":7}`,
		"non-JSON":          `Error: not logged in`,
		"truncated":         `{"type":"result","subtype":"succ`,
		"array":             `[1,2]`,
		"init without id":   `{"type":"system","subtype":"init"}`,
		"assistant w/o msg": `{"type":"assistant"}`,
	} {
		if _, err := Parse([]byte(line)); !IsSchemaError(err) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	ev, err := Parse([]byte(`{"type":"result","subtype":"error","is_error":true,"result":""}`))
	if err != nil || !ev.Result.IsError {
		t.Fatalf("logical error: %+v %v", ev, err)
	}
}

// docs/cursor-cli.md#scenario-22: the excerpt of a non-JSON line is bounded and escaped.
func TestParseExcerpt(t *testing.T) {
	_, err := Parse([]byte("T: plan limit \x1b[31m" + strings.Repeat("z", 1000)))
	se, ok := err.(*SchemaError)
	if !ok || len(se.Excerpt) > 4*excerptBytes || strings.ContainsRune(se.Excerpt, 0x1b) || !strings.HasPrefix(se.Excerpt, "T: plan limit") {
		t.Fatalf("err = %#v", err)
	}
	if !IsBlank([]byte(" \t\r")) || IsBlank([]byte("{}")) {
		t.Fatal("IsBlank")
	}
}

// Interaction payloads are never decoded into the event.
func TestParseInteractionKeepsNoPayload(t *testing.T) {
	ev, err := Parse([]byte(`{"type":"interaction_query","subtype":"request","query_type":"x","prompt":"SECRET","command":"rm -rf /","url":"https://x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join([]string{ev.Text, ev.Subtype, ev.Type, ev.ModelCallID}, ""), "SECRET") || ev.Tool != nil || ev.Init != nil {
		t.Fatalf("payload kept: %+v", ev)
	}
}

func FuzzParse(f *testing.F) {
	for line := range fixtures {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"type":"tool_call","subtype":"completed","call_id":"g","tool_call":{"function":{"name":"x","arguments":{},"result":{"error":{}}}}}`))
	f.Add([]byte(`{"type":"result","subtype":"success","is_error":false,"result":"x","duration_ms":1e300,"usage":{"inputTokens":"x"}}`))
	f.Add([]byte("\xff\xfe{"))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := Parse(line)
		if err != nil {
			if !IsSchemaError(err) {
				t.Fatalf("non-schema error %T: %v", err, err)
			}
			_ = err.Error()
			return
		}
		if ev.Kind == KindInvalid {
			t.Fatalf("accepted line without a kind: %q", line)
		}
		switch ev.Kind {
		case KindResult:
			if ev.Result == nil || ev.Result.IsError != (ev.Result.Subtype == "error") {
				t.Fatalf("inconsistent result: %+v", ev.Result)
			}
		case KindToolCompleted:
			if ev.Tool == nil || ev.Tool.OutcomeClass == OutcomeUnknown || ev.Tool.CallID == "" || len(ev.Tool.CallID) > MaxCallIDBytes {
				t.Fatalf("bad tool: %+v", ev.Tool)
			}
		case KindInit:
			if ev.Init == nil {
				t.Fatal("init without payload")
			}
		}
		if bytes.Contains(line, []byte("interaction_query")) && ev.Kind == KindInteractionRequest && ev.Text != "" {
			t.Fatal("interaction payload kept")
		}
	})
}
