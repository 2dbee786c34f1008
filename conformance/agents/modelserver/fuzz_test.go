package modelserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// routePath turns a route pattern into a request path: wildcards become a
// model call that the Gemini route understands.
func routePath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	for {
		i := strings.Index(path, "{")
		if i < 0 {
			return method, path
		}
		j := strings.Index(path[i:], "}")
		if j < 0 {
			return method, path
		}
		path = path[:i] + "scripted:streamGenerateContent" + path[i+j+1:]
	}
}

// FuzzRoutes sends arbitrary bodies to every registered route: whatever an
// agent posts, each wire format answers (an error status is fine) without
// panicking or hanging, and the Script's reply, which echoes a tool the
// request offered, encodes in every format.
func FuzzRoutes(f *testing.F) {
	seeds := []string{
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"invoke_agent","args":{"agent_name":"x"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"invoke_agent","response":{"output":"done"}}}]}],"systemInstruction":{"parts":[{"text":"sys"}]},"tools":[{"functionDeclarations":[{"name":"invoke_agent"}]}]}`,
		`{"model":"m","instructions":"sys","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call","name":"spawn_agent","arguments":"{}","call_id":"c1"},{"type":"function_call_output","call_id":"c1","output":"{\"agent_id\":\"a\"}"}],"tools":[{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn_agent"}]},{"type":"web_search"}]}`,
		`{"message":"","nodes":[{"id":1,"type":0,"text_node":{"content":"hi"}},{"id":2,"type":1,"tool_result_node":{"tool_use_id":"t1","content":"ok","is_error":false}}],"chat_history":[{"request_message":"","response_text":"","request_nodes":[],"response_nodes":[{"id":1,"type":5,"tool_use":{"tool_use_id":"t1","tool_name":"sub-agent-explore","input_json":"{}"}}]}],"tool_definitions":[{"name":"sub-agent-explore"}]}`,
		`{"model":"m","stream":true,"system":"sys","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"Task"}]}`,
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"ok"}],"tools":[{"function":{"name":"task"}}]}`,
		`{"contents":[{"parts":[{"functionCall":null,"functionResponse":{"response":"x"}}]}]}`,
		`{"input":[{"type":"function_call","arguments":"not json"}],"tools":[{"type":"namespace","tools":[{}]}]}`,
		`{"input":[{"type":"agent_message","author":"/root","recipient":"/root/x","content":[{"type":"input_text","text":"Task"},{"type":"encrypted_content","encrypted_content":"do it"}]},{"type":"agent_message","content":"x"}]}`,
		`{"nodes":[{"tool_use":{"input_json":""}}],"chat_history":[{}]}`,
		`null`, `[]`, ``, `{`,
	}
	patterns := Routes()
	for _, s := range seeds {
		for r := range patterns {
			f.Add(uint8(r), []byte(s))
		}
	}
	srv, err := Start(func(req *Request) Reply {
		rep := Reply{Text: "scripted"}
		if len(req.Tools) > 0 {
			rep.ToolCalls = []ToolCall{{ID: "call_1", Name: req.Tools[0], Input: Input(map[string]any{"k": "v"})}}
		}
		return rep
	})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	client := &http.Client{}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		method, path := routePath(patterns[int(route)%len(patterns)])
		// The bound only turns a hang into a failure; it is no speed target.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path+"?alt=sse", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatalf("%s %s: reading the answer: %v", method, path, err)
		}
	})
}
