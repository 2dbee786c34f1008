package modelserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// Round trips of the Gemini, OpenAI Responses and Augment formats, on
// request bodies shaped like the ones Gemini CLI 0.61.0, codex-acp 0.16.0
// and Auggie 0.36.0 send.

func startScripted(t *testing.T) (*Server, *[]*Request) {
	t.Helper()
	var got []*Request
	s, err := Start(scripted(&got))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &got
}

func TestGeminiRoundTrip(t *testing.T) {
	s, got := startScripted(t)
	out := post(t, s, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `{
		"systemInstruction":{"role":"user","parts":[{"text":"sys"}]},
		"tools":[{"functionDeclarations":[{"name":"invoke_agent"},{"name":"task"}]}],
		"contents":[
		 {"role":"user","parts":[{"text":"<session_context>"},{"text":"task alpha"}]},
		 {"role":"model","parts":[{"text":"thinking","thought":true},{"functionCall":{"id":"c1","name":"invoke_agent","args":{"agent_name":"x"}}}]},
		 {"role":"user","parts":[{"functionResponse":{"id":"c1","name":"invoke_agent","response":{"output":"done"}}},
		                         {"functionResponse":{"id":"c2","name":"invoke_agent","response":{"error":"denied"}}}]}]}`)
	q := (*got)[0]
	if q.Format != "gemini" || q.Model != "gemini-2.5-pro" || !q.Stream || q.System != "sys" || !q.HasTool("invoke_agent") {
		t.Fatalf("decoded %+v", q)
	}
	if q.FirstUserText() != "<session_context>\ntask alpha" || q.Messages[1].Role != "assistant" || q.Messages[1].Text != "" ||
		q.Messages[1].ToolCalls[0].ID != "c1" || string(q.Messages[1].ToolCalls[0].Input) != `{"agent_name":"x"}` {
		t.Fatalf("decoded messages %+v", q.Messages)
	}
	res := q.ToolResults()
	if len(res) != 2 || res[0] != (ToolResult{CallID: "c1", Text: "done"}) || res[1] != (ToolResult{CallID: "c2", Text: "denied", IsError: true}) {
		t.Fatalf("tool results %+v", res)
	}
	events := sseData(t, out)
	if len(events) != 1 {
		t.Fatalf("%d events:\n%s", len(events), out)
	}
	var answer struct {
		Candidates []struct {
			Content struct {
				Role  string `json:"role"`
				Parts []struct {
					Text         string `json:"text"`
					FunctionCall *struct {
						ID   string            `json:"id"`
						Name string            `json:"name"`
						Args map[string]string `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	b, _ := json.Marshal(events[0])
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatal(err)
	}
	c := answer.Candidates[0]
	if c.Content.Role != "model" || len(c.Content.Parts) != 2 || c.Content.Parts[0].Text != "hello" ||
		c.Content.Parts[1].FunctionCall.ID != "call_1" || c.Content.Parts[1].FunctionCall.Args["prompt"] != "p" || c.FinishReason != "STOP" {
		t.Fatalf("answer %s", b)
	}

	// The unstreamed call answers one JSON document; other methods are 404.
	plain := post(t, s, "/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if !strings.HasPrefix(plain, `{"candidates"`) {
		t.Fatalf("generateContent answered %s", plain)
	}
	if (*got)[1].Stream {
		t.Fatal("generateContent decoded as streamed")
	}
}

func TestOpenAIResponsesRoundTrip(t *testing.T) {
	s, got := startScripted(t)
	out := post(t, s, "/v1/responses", `{"model":"m","instructions":"base","stream":true,
		"tools":[{"type":"function","name":"exec_command"},
		         {"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn_agent"},{"type":"function","name":"task"}]},
		         {"type":"web_search"}],
		"input":[
		 {"type":"message","role":"developer","content":[{"type":"input_text","text":"perms"}]},
		 {"type":"message","role":"user","content":[{"type":"input_text","text":"task alpha"}]},
		 {"type":"reasoning","summary":[]},
		 {"type":"function_call","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{\"message\":\"m\"}","call_id":"c1"},
		 {"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c2"},
		 {"type":"function_call_output","call_id":"c1","output":"{\"agent_id\":\"a1\"}"},
		 {"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"ok"}]}]}`)
	q := (*got)[0]
	if q.Format != "openai-responses" || q.System != "base\nperms" || q.FirstUserText() != "task alpha" {
		t.Fatalf("decoded %+v", q)
	}
	if strings.Join(q.Tools, ",") != "exec_command,spawn_agent,task,web_search" {
		t.Fatalf("tools %v", q.Tools)
	}
	if len(q.Messages) != 3 || len(q.Messages[1].ToolCalls) != 2 || q.Messages[1].ToolCalls[0].Name != "spawn_agent" {
		t.Fatalf("messages %+v", q.Messages)
	}
	res := q.ToolResults()
	if len(res) != 2 || res[0].Text != `{"agent_id":"a1"}` || res[1].Text != "ok" {
		t.Fatalf("tool results %+v", res)
	}
	var types []string
	var call map[string]any
	for _, ev := range sseData(t, out) {
		types = append(types, ev["type"].(string))
		if item, ok := ev["item"].(map[string]any); ok && ev["type"] == "response.output_item.done" && item["type"] == "function_call" {
			call = item
		}
	}
	want := "response.created response.output_item.added response.output_text.delta response.output_item.done " +
		"response.output_item.added response.output_item.done response.completed"
	if strings.Join(types, " ") != want {
		t.Fatalf("events %v", types)
	}
	// "task" was offered inside the namespace: the call carries it.
	if call["name"] != "task" || call["namespace"] != "multi_agent_v1" || call["call_id"] != "call_1" || call["arguments"] != `{"prompt":"p"}` {
		t.Fatalf("function call %v", call)
	}
	if !strings.Contains(out, "event: response.completed\n") {
		t.Fatalf("events are not named:\n%s", out)
	}
}

func TestAugmentRoundTrip(t *testing.T) {
	s, got := startScripted(t)
	out := post(t, s, "/chat-stream", `{"model":"","message":"","mode":"CLI_NONINTERACTIVE",
		"tool_definitions":[{"name":"sub-agent-explore","input_schema_json":"{}"},{"name":"task"}],
		"chat_history":[{"request_message":"","response_text":"","request_nodes":[{"id":1,"type":0,"text_node":{"content":"task alpha"}},
		  {"id":2,"type":4,"ide_state_node":{"workspace_folders":[]}}],
		  "response_nodes":[{"id":1,"type":5,"content":"","tool_use":{"tool_use_id":"t1","tool_name":"sub-agent-explore","input_json":"{\"action\":\"run\"}"}}]}],
		"nodes":[{"id":1,"type":4,"ide_state_node":{}},{"id":1,"type":1,"tool_result_node":{"tool_use_id":"t1","content":"ANSWER","is_error":false}}]}`)
	q := (*got)[0]
	if q.Format != "augment" || q.FirstUserText() != "task alpha" || !q.HasTool("sub-agent-explore") || len(q.Messages) != 3 {
		t.Fatalf("decoded %+v", q)
	}
	if c := q.Messages[1].ToolCalls; len(c) != 1 || c[0].ID != "t1" || string(c[0].Input) != `{"action":"run"}` {
		t.Fatalf("tool calls %+v", q.Messages[1])
	}
	if res := q.ToolResults(); len(res) != 1 || res[0] != (ToolResult{CallID: "t1", Text: "ANSWER"}) {
		t.Fatalf("tool results %+v", res)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != `{"text":"hello"}` || lines[2] != `{"stop_reason":3,"text":""}` {
		t.Fatalf("answer lines:\n%s", out)
	}
	var mid struct {
		Nodes []struct {
			Type    int `json:"type"`
			ToolUse struct {
				ToolUseID string `json:"tool_use_id"`
				ToolName  string `json:"tool_name"`
				InputJSON string `json:"input_json"`
			} `json:"tool_use"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &mid); err != nil || len(mid.Nodes) != 1 || mid.Nodes[0].Type != 5 ||
		mid.Nodes[0].ToolUse.ToolUseID != "call_1" || mid.Nodes[0].ToolUse.ToolName != "task" || mid.Nodes[0].ToolUse.InputJSON != `{"prompt":"p"}` {
		t.Fatalf("tool use line %s (%v)", lines[1], err)
	}

	// get-models turns the sub-agent tools on.
	if models := post(t, s, "/get-models", `{}`); !strings.Contains(models, `"beachhead_enable_sub_agent_tool":true`) {
		t.Fatalf("get-models answered %s", models)
	}
}
