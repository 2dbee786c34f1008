package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Decode errors go on the wire as text (-32602 data, or -32603 for a bad
// result), so they must read exactly as upstream v0.13.5's: the generated
// decoders' local types carry the real type name (Alias for the types with
// schema defaults, as upstream), never an internal one. The texts below were
// taken from upstream v0.13.5 built with the same toolchain.
func TestDecodeErrorTextsMatchUpstream(t *testing.T) {
	cases := []struct {
		name string
		into any
		in   string
		want string
	}{
		{"request field", new(ReadTextFileRequest), `{"path":"/x","sessionId":1}`,
			"json: cannot unmarshal number into Go struct field ReadTextFileRequest.sessionId of type acp.SessionId"},
		{"request not an object", new(ReadTextFileRequest), `"x"`,
			"json: cannot unmarshal string into Go value of type acp.ReadTextFileRequest"},
		{"response field", new(NewSessionResponse), `{"sessionId":1}`,
			"json: cannot unmarshal number into Go struct field NewSessionResponse.sessionId of type acp.SessionId"},
		{"union variant field", new(ContentBlockText), `{"type":"text","text":1}`,
			"json: cannot unmarshal number into Go struct field ContentBlockText.text of type string"},
		{"union variant not an object", new(ContentBlockText), `[]`,
			"json: cannot unmarshal array into Go value of type acp.ContentBlockText"},
		{"defaults field", new(InitializeRequest), `{"protocolVersion":"1"}`,
			"json: cannot unmarshal string into Go struct field Alias.protocolVersion of type acp.ProtocolVersion"},
		{"defaults nested", new(InitializeRequest), `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":1}}}`,
			"json: cannot unmarshal number into Go struct field Alias.clientCapabilities.fs.readTextFile of type bool"},
		{"defaults not an object", new(InitializeRequest), `true`,
			"json: cannot unmarshal bool into Go value of type map[string]json.RawMessage"},
		{"nested struct names the innermost struct", new(CreateTerminalRequest), `{"sessionId":"s","command":"x","env":[{"name":1,"value":"v"}]}`,
			"json: cannot unmarshal number into Go struct field EnvVariable.env.name of type string"},
		{"nested through a lenient type", new(RequestPermissionRequest), `{"sessionId":"s","options":[],"toolCall":{"toolCallId":"t","name":5,"locations":[{"path":1}]}}`,
			"json: cannot unmarshal number into Go struct field ToolCallLocation.toolCall.locations.path of type string"},
		{"lenient type not an object", new(ToolCallUpdate), `[]`,
			"json: cannot unmarshal array into Go value of type acp.ToolCallUpdate"},
		{"lenient type strict field", new(ToolCallUpdate), `{"toolCallId":"t","name":5,"status":3}`,
			"json: cannot unmarshal number into Go struct field ToolCallUpdate.status of type acp.ToolCallStatus"},
		{"defaults with a malformed addition", new(InitializeRequest), `{"protocolVersion":1,"clientCapabilities":{"subagents":true,"fs":{"readTextFile":"no"}}}`,
			"json: cannot unmarshal string into Go struct field Alias.clientCapabilities.fs.readTextFile of type bool"},
		{"response with a malformed addition", new(NewSessionResponse), `{"sessionId":2,"models":7}`,
			"json: cannot unmarshal number into Go struct field NewSessionResponse.sessionId of type acp.SessionId"},
		{"union tagged variant fails", new(ContentBlock), `{"type":"text","text":1}`,
			"invalid variant payload"},
		{"union no variant fits", new(ContentBlock), `1`,
			"no matching variant for union"},
		{"union keyed variant fails", new(RequestPermissionOutcome), `{"outcome":"selected","optionId":1}`,
			"invalid variant payload"},
		{"union inside a request", new(PromptRequest), `{"sessionId":"s","prompt":[{"type":"text","text":1}]}`,
			"invalid variant payload"},
		{"union value inside a request", new(PromptRequest), `{"sessionId":"s","prompt":[7]}`,
			"no matching variant for union"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := json.Unmarshal([]byte(c.in), c.into)
			if err == nil || err.Error() != c.want {
				t.Fatalf("Unmarshal(%s) into %T = %v\nwant %s", c.in, c.into, err, c.want)
			}
		})
	}
}

// A union's upstream text is terse; the specific cause stays reachable.
func TestUnionDecodeErrorUnwrapsToCause(t *testing.T) {
	var block ContentBlock
	err := json.Unmarshal([]byte(`{"type":"text","text":1}`), &block)
	if err == nil || err.Error() != "invalid variant payload" {
		t.Fatalf("err = %v", err)
	}
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) || !strings.Contains(typeErr.Error(), "ContentBlockText.text") {
		t.Fatalf("cause not reachable: %v (unwrapped %v)", err, errors.Unwrap(err))
	}
}

// Properties this SDK adds to v0.13.5 types are unknown to upstream, which
// ignores them; a malformed value therefore decodes as absent rather than
// failing a message upstream accepts, and everything else is kept.
func TestMalformedAdditionsDecodeAsAbsent(t *testing.T) {
	var init InitializeRequest
	if err := json.Unmarshal([]byte(`{"protocolVersion":1,"clientCapabilities":{"subagents":true,"fs":{"readTextFile":true}}}`), &init); err != nil {
		t.Fatal(err)
	}
	if init.ClientCapabilities.Subagents != nil || !init.ClientCapabilities.Fs.ReadTextFile || init.ProtocolVersion != 1 {
		t.Fatalf("decoded %+v", init)
	}
	var resp NewSessionResponse
	if err := json.Unmarshal([]byte(`{"sessionId":"s","models":{"availableModels":3},"modes":{"currentModeId":"m","availableModes":[]}}`), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.LegacyModels != nil || resp.SessionId != "s" || resp.Modes == nil || resp.Modes.CurrentModeId != "m" {
		t.Fatalf("decoded %+v", resp)
	}
	var tc ToolCallUpdate
	if err := json.Unmarshal([]byte(`{"toolCallId":"t","NAME":5,"title":"x"}`), &tc); err != nil {
		t.Fatal(err)
	}
	if tc.Name != nil || tc.ToolCallId != "t" || tc.Title == nil || *tc.Title != "x" {
		t.Fatalf("decoded %+v", tc)
	}
}
