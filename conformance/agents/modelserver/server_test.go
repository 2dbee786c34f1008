package modelserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// scripted answers every call with a text and a tool call, echoing what it
// was asked so tests can see the decoded request.
func scripted(got *[]*Request) Script {
	return func(req *Request) Reply {
		*got = append(*got, req)
		return Reply{Text: "hello", ToolCalls: []ToolCall{{ID: "call_1", Name: "task", Input: Input(map[string]string{"prompt": "p"})}}}
	}
}

func post(t *testing.T, s *Server, path, body string) string {
	t.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s: %s", path, resp.Status, b.String())
	}
	return b.String()
}

// sseData returns the JSON payloads of an event stream.
func sseData(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("data line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestAnthropicRoundTrip(t *testing.T) {
	var got []*Request
	s, err := Start(scripted(&got))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := post(t, s, "/v1/messages", `{"model":"m","stream":true,"system":[{"type":"text","text":"sys"}],
		"tools":[{"name":"Task"}],
		"messages":[{"role":"user","content":"task alpha"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"a":1}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"done"}]}]}]}`)
	if len(got) != 1 {
		t.Fatalf("%d script calls", len(got))
	}
	q := got[0]
	if q.System != "sys" || q.FirstUserText() != "task alpha" || !q.HasTool("Task") || len(q.ToolResults()) != 1 ||
		q.ToolResults()[0].Text != "done" || q.Messages[1].ToolCalls[0].ID != "t1" {
		t.Fatalf("decoded %+v", q)
	}
	var types []string
	for _, ev := range sseData(t, out) {
		types = append(types, ev["type"].(string))
	}
	want := "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v", types)
	}
	if !strings.Contains(out, `"stop_reason":"tool_use"`) || !strings.Contains(out, `"partial_json":"{\"prompt\":\"p\"}"`) {
		t.Fatalf("stream lacks the tool call:\n%s", out)
	}
}

func TestOpenAIChatRoundTrip(t *testing.T) {
	var got []*Request
	s, err := Start(scripted(&got))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := post(t, s, "/v1/chat/completions", `{"model":"m","stream":true,"tools":[{"type":"function","function":{"name":"task"}}],
		"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"task alpha"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"task","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"task","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"one"},{"role":"tool","tool_call_id":"c2","content":"two"}]}`)
	q := got[0]
	if q.System != "sys" || q.FirstUserText() != "task alpha" || !q.HasTool("task") || len(q.Messages) != 3 || len(q.ToolResults()) != 2 {
		t.Fatalf("decoded %+v", q)
	}
	events := sseData(t, out)
	last := events[len(events)-1]["choices"].([]any)[0].(map[string]any)
	if last["finish_reason"] != "tool_calls" || !strings.HasSuffix(strings.TrimSpace(out), "data: [DONE]") {
		t.Fatalf("stream end:\n%s", out)
	}
}

func TestUnknownRouteIsLogged(t *testing.T) {
	s, err := Start(func(*Request) Reply { return Reply{} })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get(s.URL + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(s.Summary(), "unknown route") {
		t.Fatalf("status %d, log %q", resp.StatusCode, s.Summary())
	}
}

// A held call stays open until the agent drops it, and runs the hold hook.
func TestHoldUntilDropped(t *testing.T) {
	s, err := Start(func(*Request) Reply { return Reply{Hold: true} })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := make(chan struct{}, 1)
	s.SetOnHold(func() { held <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages", strings.NewReader(`{"stream":true}`))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-held
	select {
	case err := <-done:
		t.Fatalf("a held call was answered: %v", err)
	default:
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the dropped call did not fail on the client side")
	}
}

// A reply's Thought streams as a reasoning_content delta before the text
// (Qwen Code shows it as an agent_thought_chunk); without one no delta
// carries reasoning_content.
func TestOpenAIChatThought(t *testing.T) {
	for _, thought := range []string{"pondering", ""} {
		s, err := Start(func(*Request) Reply { return Reply{Thought: thought, Text: "hello"} })
		if err != nil {
			t.Fatal(err)
		}
		out := post(t, s, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		s.Close()
		var order []string
		for _, e := range sseData(t, out) {
			delta := e["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
			if r, ok := delta["reasoning_content"]; ok {
				order = append(order, "thought:"+r.(string))
			}
			if c, _ := delta["content"].(string); c != "" {
				order = append(order, "text:"+c)
			}
		}
		want := []string{"text:hello"}
		if thought != "" {
			want = []string{"thought:" + thought, "text:hello"}
		}
		if strings.Join(order, ",") != strings.Join(want, ",") {
			t.Errorf("thought %q: deltas %q, want %q", thought, order, want)
		}
	}
}
