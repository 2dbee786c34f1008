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
