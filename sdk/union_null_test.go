package acp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// JSON null where a union is expected decodes as a no-op (the encoding/json
// convention): the union keeps what it held, a fresh one stays empty, and the
// rest of the message survives. Each case runs with the fast path and with
// encoding/json alone.

// bothPaths runs check once per decoding path.
func bothPaths(t *testing.T, check func(t *testing.T)) {
	t.Helper()
	t.Run("fast", check)
	t.Run("encoding-json", func(t *testing.T) {
		fastDecodeOff.Store(true)
		defer fastDecodeOff.Store(false)
		check(t)
	})
}

func TestUnionNullContentInSessionNotification(t *testing.T) {
	in := `{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":null,"messageId":"m1"}}`
	bothPaths(t, func(t *testing.T) {
		var n SessionNotification
		if err := json.Unmarshal([]byte(in), &n); err != nil {
			t.Fatalf("decode: %v", err)
		}
		chunk := n.Update.AgentMessageChunk
		if n.SessionId != "s1" || chunk == nil {
			t.Fatalf("decoded %#v", n)
		}
		if chunk.MessageId == nil || *chunk.MessageId != "m1" {
			t.Fatalf("messageId lost: %#v", chunk)
		}
		if !reflect.DeepEqual(chunk.Content, ContentBlock{}) {
			t.Fatalf("content should have no variant, got %#v", chunk.Content)
		}
		if chunk.Content.Validate() == nil {
			t.Fatal("Validate accepts a content block with no variant")
		}
	})
	// The one-pass decoder handles the null itself, without falling back.
	d := fastDecoder{jsonScanner: jsonScanner{data: []byte(in)}}
	var n SessionNotification
	if err := n.decodeFast(&d); err != nil || !d.atEnd() {
		t.Fatalf("fast path gave up: %v", err)
	}
}

func TestUnionNullOutcomeInRequestPermissionResponse(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		var r RequestPermissionResponse
		if err := json.Unmarshal([]byte(`{"outcome":null,"_meta":{"k":"v"}}`), &r); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(r.Outcome, RequestPermissionOutcome{}) || r.Meta["k"] != "v" {
			t.Fatalf("decoded %#v", r)
		}
	})
}

func TestUnionNullInArray(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		var p PromptRequest
		in := `{"sessionId":"s","prompt":[{"type":"text","text":"a"},null,{"type":"text","text":"b"}]}`
		if err := json.Unmarshal([]byte(in), &p); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(p.Prompt) != 3 || p.Prompt[0].Text == nil || p.Prompt[2].Text == nil || p.Prompt[2].Text.Text != "b" {
			t.Fatalf("prompt %#v", p.Prompt)
		}
		if !reflect.DeepEqual(p.Prompt[1], ContentBlock{}) {
			t.Fatalf("null element should be empty, got %#v", p.Prompt[1])
		}
		var blocks []ContentBlock
		if err := json.Unmarshal([]byte(`[null]`), &blocks); err != nil || len(blocks) != 1 || !reflect.DeepEqual(blocks[0], ContentBlock{}) {
			t.Fatalf("[null] = %#v, %v", blocks, err)
		}
	})
}

func TestUnionNullLeavesValueUnchanged(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		for _, in := range []string{`null`, ` null `, "\n\tnull\r\n"} {
			u := ContentBlock{Text: &ContentBlockText{Text: "kept"}}
			if err := u.UnmarshalJSON([]byte(in)); err != nil {
				t.Fatalf("%q: %v", in, err)
			}
			if u.Text == nil || u.Text.Text != "kept" {
				t.Fatalf("%q changed the union: %#v", in, u)
			}
			if err := json.Unmarshal([]byte(in), &u); err != nil || u.Text == nil || u.Text.Text != "kept" {
				t.Fatalf("json.Unmarshal(%q): %#v, %v", in, u, err)
			}
		}
		// Only the literal counts: near misses still fail.
		for _, in := range []string{`nul`, `nulll`, "\vnull", `"null"`} {
			var u ContentBlock
			if err := u.UnmarshalJSON([]byte(in)); err == nil {
				t.Fatalf("%q decoded: %#v", in, u)
			}
		}
	})
}

// Every generated union accepts null, and the empty result still refuses to
// encode, as before.
func TestEveryUnionNullIsNoOp(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		for _, it := range generatedUnions {
			v := it.New()
			if err := json.Unmarshal([]byte(`null`), v); err != nil {
				t.Fatalf("%s: %v", it.Name, err)
			}
			if it.Name == "RequestId" {
				continue // null is one of its variants
			}
			if !reflect.ValueOf(v).Elem().IsZero() {
				t.Fatalf("%s: null set something: %#v", it.Name, v)
			}
			if _, err := json.Marshal(v); err == nil || !strings.Contains(err.Error(), "no variant set") {
				t.Fatalf("%s: encoding an empty union: %v", it.Name, err)
			}
		}
	})
}

// RequestId keeps null as a value of its own.
func TestRequestIdNullStillAVariant(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		var id RequestId
		if err := json.Unmarshal([]byte(`null`), &id); err != nil || id.Null == nil {
			t.Fatalf("RequestId null: %#v, %v", id, err)
		}
		var r UnstableCancelRequestNotification
		if err := json.Unmarshal([]byte(`{"requestId":null}`), &r); err != nil || r.RequestId.Null == nil {
			t.Fatalf("requestId null in a message: %#v, %v", r, err)
		}
	})
}

// Over a real pipe, a session/update whose content is null reaches the
// client's handler instead of being dropped.
func TestClientSessionUpdateNullContentDelivered(t *testing.T) {
	tc := newTestClient()
	_, peer := clientUnderTest(t, tc)
	peer.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":null}}}`)
	peer.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"after"}}}}`)
	waitSeen(t, tc, "session/update")
	waitSeen(t, tc, "session/update")
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(tc.updates) != 2 {
		t.Fatalf("%d updates delivered", len(tc.updates))
	}
	first := tc.updates[0].Update.AgentMessageChunk
	if first == nil || !reflect.DeepEqual(first.Content, ContentBlock{}) {
		t.Fatalf("first update %#v", tc.updates[0])
	}
	second := tc.updates[1].Update.AgentMessageChunk
	if second == nil || second.Content.Text == nil || second.Content.Text.Text != "after" {
		t.Fatalf("second update %#v", tc.updates[1])
	}
}
