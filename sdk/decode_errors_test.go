package acp

import (
	"encoding/json"
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
