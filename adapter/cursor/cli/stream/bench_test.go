package stream

import (
	"bytes"
	"strings"
	"testing"
)

// benchStream is a realistic turn: init, echo, thinking, tool calls with
// file content, assistant text and a result.
func benchStream() [][]byte {
	content := strings.Repeat(`package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n`, 40)
	lines := []string{
		`{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/srv/ws/demo","session_id":"` + sid + `","model":"Auto","permissionMode":"default"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("prompt ", 200) + `"}]},"session_id":"` + sid + `"}`,
	}
	for i := 0; i < 20; i++ {
		lines = append(lines,
			`{"type":"thinking","subtype":"delta","text":"Checking main.go and the tests around it","session_id":"`+sid+`","timestamp_ms":1787000000000}`,
			`{"type":"tool_call","subtype":"started","call_id":"call-1","tool_call":{"readToolCall":{"args":{"path":"main.go"}}},"session_id":"`+sid+`"}`,
			`{"type":"tool_call","subtype":"completed","call_id":"call-1","tool_call":{"readToolCall":{"args":{"path":"main.go"},"result":{"success":{"content":"`+content+`","isEmpty":false,"exceededLimit":false,"totalLines":40,"totalChars":812}}}},"session_id":"`+sid+`"}`,
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"main.go prints a greeting."}]},"session_id":"`+sid+`"}`,
		)
	}
	lines = append(lines, `{"type":"result","subtype":"success","is_error":false,"duration_ms":4889,"duration_api_ms":4702,"result":"main.go prints a greeting.","session_id":"`+sid+`","request_id":"req-1","usage":{"inputTokens":14948,"outputTokens":103,"cacheReadTokens":0,"cacheWriteTokens":0}}`)
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = []byte(l)
	}
	return out
}

// BenchmarkParseStream measures parse throughput over a realistic turn
// (MB/s is bytes of stream-json per second).
func BenchmarkParseStream(b *testing.B) {
	lines := benchStream()
	b.SetBytes(int64(len(bytes.Join(lines, []byte{'\n'})) + 1))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, err := Parse(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkParseSmallEvent is the per-event overhead: one short event.
func BenchmarkParseSmallEvent(b *testing.B) {
	line := []byte(`{"type":"thinking","subtype":"delta","text":"Checking main.go","session_id":"` + sid + `","timestamp_ms":1787000000000}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseToolCompleted is one tool completion with a 3 KiB result.
func BenchmarkParseToolCompleted(b *testing.B) {
	line := benchStream()[4]
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(line); err != nil {
			b.Fatal(err)
		}
	}
}
