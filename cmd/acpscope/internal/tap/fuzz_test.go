package tap

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// FuzzPassThrough sends a fuzzed stream of frames each way through a tap
// whose observer is small enough to overflow (a queue of 4 lines, lines of
// at most 512 bytes) and checks that each side receives exactly the bytes
// the other sent: malformed lines, huge frames, bursts, CRLF and a missing
// final newline alike.
func FuzzPassThrough(f *testing.F) {
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Task","rawInput":{"_toolName":"task"}}}}`
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"),
		[]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"cursor-agent"}}}`+"\n"), []byte{0})
	f.Add([]byte("garbage\n{\n}\n\n\r\n"), []byte("\x00\xff\xfe{\"id\":\n"), []byte{1, 2, 3})
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s"}}`+"\r\n"),
		[]byte(strings.Repeat(update+"\n", 200)), []byte{255, 0, 9})
	f.Add([]byte(`{"id":"a","method":"x","params":{"big":"`+strings.Repeat("é", 4000)+`"}}`),
		[]byte(`{"jsonrpc":"2.0","id":"a","result":{}}`), []byte{7})
	f.Add([]byte{}, []byte("\n\n\n"), []byte{})
	f.Fuzz(func(t *testing.T, in, out, sizes []byte) {
		toAgent, toEditor, st := passThrough(t, in, out, sizes, Config{
			Observer: newTestObserver(t, io.Discard), QueueLines: 4, MaxLineBytes: 512,
		})
		if !bytes.Equal(toAgent, in) {
			t.Fatalf("editor → agent changed:\n got %q\nwant %q", toAgent, in)
		}
		if !bytes.Equal(toEditor, out) {
			t.Fatalf("agent → editor changed:\n got %q\nwant %q", toEditor, out)
		}
		if st.FromEditor != int64(len(in)) || st.FromAgent != int64(len(out)) {
			t.Fatalf("counted %d/%d bytes, sent %d/%d", st.FromEditor, st.FromAgent, len(in), len(out))
		}
	})
}
