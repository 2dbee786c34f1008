package acp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// roundTrip decodes in into v and re-encodes it.
func roundTrip(t *testing.T, in string, v any) string {
	t.Helper()
	if err := json.Unmarshal([]byte(in), v); err != nil {
		t.Fatalf("decode %s: %v", in, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return string(out)
}

// Deliberate fix: upstream decodes an unknown kind as session_info_update.
func TestUnknownSessionUpdateKeptRaw(t *testing.T) {
	in := `{"sessionUpdate":"brand_new","z":1,"a":{"deep":[true,null,"x\u00e9"]},"big":12345678901234567890}`
	var u SessionUpdate
	if out := roundTrip(t, in, &u); out != in {
		t.Fatalf("re-encoded\n got %s\nwant %s", out, in)
	}
	kind, raw, ok := u.Unknown()
	if !ok || kind != "brand_new" || string(raw) != in {
		t.Fatalf("Unknown() = %q %s %v", kind, raw, ok)
	}
	if err := u.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// Known variants report no unknown.
	var k SessionUpdate
	roundTrip(t, `{"sessionUpdate":"plan","entries":[]}`, &k)
	if _, _, ok := k.Unknown(); ok || k.Plan == nil {
		t.Fatalf("plan mis-decoded: %+v", k)
	}
	// A missing or non-string tag is an error, never a guessed variant.
	for _, bad := range []string{`{"entries":[]}`, `{"sessionUpdate":5}`} {
		var x SessionUpdate
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Fatalf("%s decoded as %+v", bad, x)
		}
	}
}

// Deliberate fix: upstream drops _meta and annotations when encoding content blocks.
func TestContentBlockKeepsMetaAndAnnotations(t *testing.T) {
	cases := []string{
		`{"_meta":{"trace":"t1"},"annotations":{"audience":["user"],"priority":0.25},"text":"hi","type":"text"}`,
		`{"_meta":{"m":1},"annotations":{"lastModified":"2026-01-01"},"data":"AAAA","mimeType":"image/png","type":"image"}`,
		`{"_meta":{"m":1},"annotations":{"priority":1},"name":"n","type":"resource_link","uri":"file:///a"}`,
		`{"_meta":{"m":1},"annotations":{"priority":1},"resource":{"text":"t","uri":"file:///a"},"type":"resource"}`,
	}
	for _, in := range cases {
		var b ContentBlock
		if out := roundTrip(t, in, &b); out != in {
			t.Fatalf("\n got %s\nwant %s", out, in)
		}
	}
}

// Deliberate fix: integers beyond 2^53 survive; smaller numbers stay float64.
func TestBigIntegersSurvive(t *testing.T) {
	in := `{"sessionId":"s","update":{"_meta":{"id":9007199254740993},"rawInput":{"list":[18446744073709551615,1.5,2],"n":-9223372036854775809},"rawOutput":123456789012345678,"sessionUpdate":"tool_call_update","toolCallId":"t"}}`
	var n SessionNotification
	if out := roundTrip(t, in, &n); out != in {
		t.Fatalf("\n got %s\nwant %s", out, in)
	}
	u := n.Update.ToolCallUpdate
	if _, ok := u.Meta["id"].(json.Number); !ok {
		t.Fatalf("_meta.id is %T", u.Meta["id"])
	}
	list := u.RawInput.(map[string]any)["list"].([]any)
	if _, ok := list[1].(float64); !ok {
		t.Fatalf("1.5 decoded as %T", list[1])
	}
	if _, ok := list[2].(float64); !ok {
		t.Fatalf("2 decoded as %T", list[2])
	}
	// Exactly representable integers, even 16-digit ones, stay float64.
	var m map[string]any
	var c ContentBlock
	roundTrip(t, `{"_meta":{"a":9007199254740992,"b":1234567890123456},"text":"x","type":"text"}`, &c)
	m = c.Text.Meta
	if reflect.TypeOf(m["a"]) != reflect.TypeOf(float64(0)) || reflect.TypeOf(m["b"]) != reflect.TypeOf(float64(0)) {
		t.Fatalf("types %T %T", m["a"], m["b"])
	}
	// Outbound: a json.Number the consumer puts in rawInput is written verbatim.
	out, err := json.Marshal(SessionUpdate{ToolCall: &SessionUpdateToolCall{ToolCallId: "t", Title: "x", RawInput: map[string]any{"n": json.Number("9007199254740993")}}})
	if err != nil || !strings.Contains(string(out), `"rawInput":{"n":9007199254740993}`) {
		t.Fatalf("%s %v", out, err)
	}
}

func TestSubagentUpdatePatchSemantics(t *testing.T) {
	in := `{"sessionId":"p","update":{"additionalDirectories":[],"capabilities":null,"description":"role","sessionId":"c","sessionUpdate":"subagent_update","state":{"state":"idle","stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}},"title":null}}`
	var n SessionNotification
	if out := roundTrip(t, in, &n); out != in {
		t.Fatalf("\n got %s\nwant %s", out, in)
	}
	s := n.Update.SubagentUpdate
	if s == nil || s.SessionId != "c" {
		t.Fatalf("not a subagent_update: %+v", n.Update)
	}
	if !s.Title.Set() || !s.Title.Null() {
		t.Fatal("title should be an explicit null")
	}
	if d, ok := s.Description.Value(); !ok || d != "role" {
		t.Fatalf("description %q %v", d, ok)
	}
	if s.Cwd.Set() {
		t.Fatal("cwd was omitted and must stay unset")
	}
	if !s.Capabilities.Null() {
		t.Fatal("capabilities null")
	}
	if dirs, ok := s.AdditionalDirectories.Value(); !ok || dirs == nil || len(dirs) != 0 {
		t.Fatalf("additionalDirectories %v %v", dirs, ok)
	}
	st, ok := s.State.Value()
	if !ok || st.Idle == nil || st.Idle.StopReason == nil || *st.Idle.StopReason != "end_turn" || st.Idle.Usage.TotalTokens != 3 {
		t.Fatalf("state %+v", st)
	}
}

func TestStateUpdateOtherKeptVerbatim(t *testing.T) {
	for _, in := range []string{
		`{"state":"_vendor.paused","since":12,"why":{"x":[1,2]}}`,
		`{"state":"working"}`,
	} {
		var s StateUpdate
		if out := roundTrip(t, in, &s); out != in {
			t.Fatalf("\n got %s\nwant %s", out, in)
		}
		if s.Other == nil || s.Other.State != strings.Split(in, `"`)[3] {
			t.Fatalf("%s: %+v", in, s)
		}
	}
	// The catch-all is built from State alone when Raw is empty.
	out, _ := json.Marshal(StateUpdate{Other: &StateUpdateOther{State: "_x"}})
	if string(out) != `{"state":"_x"}` {
		t.Fatalf("%s", out)
	}
	for in, want := range map[string]string{
		`{"state":"running"}`:                         "Running",
		`{"state":"requires_action","_meta":{"a":1}}`: "RequiresAction",
		`{"state":"unknown"}`:                         "Unknown",
		`{"error":{"code":-32603,"message":"m"},"state":"idle","stopReason":"error"}`: "Idle",
	} {
		var s StateUpdate
		roundTrip(t, in, &s)
		if reflect.ValueOf(s).FieldByName(want).IsNil() {
			t.Fatalf("%s did not decode as %s", in, want)
		}
	}
}

// Schema fields marked default-on-error decode a malformed value as absent.
func TestSubagentUpdateLenientFields(t *testing.T) {
	var s SessionUpdate
	out := roundTrip(t, `{"sessionUpdate":"subagent_update","sessionId":"c","state":5,"title":{"x":1},"capabilities":"yes","description":"d"}`, &s)
	if want := `{"description":"d","sessionId":"c","sessionUpdate":"subagent_update"}`; out != want {
		t.Fatalf("\n got %s\nwant %s", out, want)
	}
	// A field without that mark still fails the update.
	if err := json.Unmarshal([]byte(`{"sessionUpdate":"subagent_update","sessionId":"c","cwd":7}`), &s); err == nil {
		t.Fatal("cwd:7 accepted")
	}
}

func TestSessionMessages(t *testing.T) {
	in := `{"content":[{"text":"prompt","type":"text"}],"messageId":"toolu_A","recipientMessageId":"toolu_A","recipientSessionId":"child","senderSessionId":null,"sessionUpdate":"session_message"}`
	var u SessionUpdate
	if out := roundTrip(t, in, &u); out != in {
		t.Fatalf("\n got %s\nwant %s", out, in)
	}
	m := u.SessionMessage
	if m == nil || m.MessageId != "toolu_A" || !m.SenderSessionId.Null() || m.SenderMessageId.Set() {
		t.Fatalf("%+v", m)
	}
	chunk := `{"content":{"text":"x","type":"text"},"messageId":"m","sessionUpdate":"session_message_chunk"}`
	if out := roundTrip(t, chunk, &u); out != chunk || u.SessionMessageChunk == nil {
		t.Fatalf("%s", out)
	}
}

func TestToolCallContentSession(t *testing.T) {
	in := `{"sessionId":"child-1","type":"session"}`
	var c ToolCallContent
	if out := roundTrip(t, in, &c); out != in || c.Session == nil || c.Session.SessionId != "child-1" {
		t.Fatalf("%s %+v", out, c)
	}
}

func TestClientCapabilitiesSubagents(t *testing.T) {
	out, _ := json.Marshal(ClientCapabilities{Subagents: &SubagentCapabilities{}})
	if want := `{"auth":{},"fs":{},"subagents":{}}`; string(out) != want {
		t.Fatalf("got %s want %s", out, want)
	}
}

func TestDefaults(t *testing.T) {
	var r InitializeResponse
	if out := roundTrip(t, `{"protocolVersion":1}`, &r); out != `{"agentCapabilities":{"auth":{},"mcpCapabilities":{},"promptCapabilities":{},"sessionCapabilities":{}},"authMethods":[],"protocolVersion":1}` {
		t.Fatalf("%s", out)
	}
	if r.AuthMethods == nil {
		t.Fatal("authMethods default not applied")
	}
	var q InitializeRequest
	if out := roundTrip(t, `{"protocolVersion":1,"clientCapabilities":null}`, &q); out != `{"clientCapabilities":{"auth":{},"fs":{}},"protocolVersion":1}` {
		t.Fatalf("%s", out)
	}
}

func TestLegacyModels(t *testing.T) {
	in := `{"models":{"availableModels":[{"modelId":"m1","name":"M1"}],"currentModelId":"m1"},"sessionId":"s"}`
	var r NewSessionResponse
	if out := roundTrip(t, in, &r); out != in || r.LegacyModels == nil || r.LegacyModels.CurrentModelId != "m1" {
		t.Fatalf("%s", out)
	}
	out, _ := json.Marshal(UnstableSetSessionModelRequest{SessionId: "s", ModelId: "m"})
	if string(out) != `{"modelId":"m","sessionId":"s"}` {
		t.Fatalf("%s", out)
	}
}

func TestEmptyUnionFailsToEncode(t *testing.T) {
	if _, err := json.Marshal(ContentBlock{}); err == nil || !strings.Contains(err.Error(), "no variant set") {
		t.Fatalf("err = %v", err)
	}
	if err := (&ContentBlock{}).Validate(); err == nil {
		t.Fatal("Validate accepted an empty union")
	}
}

// ToolCall.name comes from the newer schema; a malformed value is dropped
// (x-deserialize-default-on-error), never failing the tool call that
// v0.13.5 would have accepted.
func TestToolCallName(t *testing.T) {
	var u SessionUpdate
	if out := roundTrip(t, `{"name":"Bash","sessionUpdate":"tool_call","title":"t","toolCallId":"x"}`, &u); out != `{"name":"Bash","sessionUpdate":"tool_call","title":"t","toolCallId":"x"}` || *u.ToolCall.Name != "Bash" {
		t.Fatalf("%s", out)
	}
	if out := roundTrip(t, `{"name":5,"sessionUpdate":"tool_call_update","toolCallId":"x"}`, &u); out != `{"sessionUpdate":"tool_call_update","toolCallId":"x"}` {
		t.Fatalf("%s", out)
	}
}

// session_message content is x-deserialize-skip-invalid-items: a malformed
// block is dropped, the valid ones kept.
func TestSessionMessageSkipsInvalidContentItems(t *testing.T) {
	var u SessionUpdate
	out := roundTrip(t, `{"sessionUpdate":"session_message","messageId":"m","content":[{"type":"text","text":"ok"},{"type":"text","text":5},{"type":"image","data":"AA","mimeType":"image/png"}]}`, &u)
	if want := `{"content":[{"text":"ok","type":"text"},{"data":"AA","mimeType":"image/png","type":"image"}],"messageId":"m","sessionUpdate":"session_message"}`; out != want {
		t.Fatalf("\n got %s\nwant %s", out, want)
	}
}

// Decimals with more digits than float64 holds stay exact too; ordinary
// decimals are float64.
func TestLongDecimalsSurvive(t *testing.T) {
	in := `{"_meta":{"ok":0.1,"pi":3.14159265358979323846,"x":1234567.123456789012},"text":"t","type":"text"}`
	var c ContentBlock
	if out := roundTrip(t, in, &c); out != in {
		t.Fatalf("\n got %s\nwant %s", out, in)
	}
	if _, ok := c.Text.Meta["ok"].(float64); !ok {
		t.Fatalf("0.1 decoded as %T", c.Text.Meta["ok"])
	}
	if _, ok := c.Text.Meta["pi"].(json.Number); !ok {
		t.Fatalf("pi decoded as %T", c.Text.Meta["pi"])
	}
}
