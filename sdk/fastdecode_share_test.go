package acp

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"
)

// bigChunkParams returns session/update params carrying an agent message
// chunk of n bytes of text.
func bigChunkParams(n int) []byte {
	return []byte(`{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` +
		strings.Repeat("t", n) + `"}}}`)
}

// within reports whether s's bytes lie inside buf.
func within(s string, buf []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	start := uintptr(unsafe.Pointer(&buf[0]))
	return p >= start && p < start+uintptr(len(buf))
}

// Inbound params are the connection's own bytes: a large text shares them
// (no second copy of a 64 MiB frame), a small string is copied so keeping
// it never keeps the frame reachable.
func TestDecodeParamsSharesOnlyLargeText(t *testing.T) {
	params := bigChunkParams(minSharedString)
	var n SessionNotification
	if err := decodeParams(params, &n); err != nil {
		t.Fatal(err)
	}
	text := n.Update.AgentMessageChunk.Content.Text.Text
	if len(text) != minSharedString || !within(text, params) {
		t.Fatalf("large text (%d bytes) was copied", len(text))
	}
	if within(string(n.SessionId), params) {
		t.Fatal("small session id shares the frame")
	}
	// Below the size floor: copied.
	small := bigChunkParams(minSharedString - 1)
	var m SessionNotification
	if err := decodeParams(small, &m); err != nil {
		t.Fatal(err)
	}
	if within(m.Update.AgentMessageChunk.Content.Text.Text, small) {
		t.Fatal("text below minSharedString shares the frame")
	}
}

// json.Unmarshal promises a value independent of the caller's buffer, which
// callers reuse: the generated UnmarshalJSON never shares it, whatever the
// size.
func TestUnmarshalJSONNeverSharesInput(t *testing.T) {
	buf := bigChunkParams(2 * minSharedString)
	var n SessionNotification
	if err := json.Unmarshal(buf, &n); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	text := n.Update.AgentMessageChunk.Content.Text.Text
	if len(text) != 2*minSharedString || strings.Trim(text, "t") != "" {
		t.Fatalf("the decoded text changed with the caller's buffer")
	}
}
