package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The OpenAI chat completions API (OpenCode through @ai-sdk/openai-compatible,
// Copilot's bring-your-own-key provider): POST {base}/chat/completions,
// streamed as server-sent "chat.completion.chunk" events ending in
// "data: [DONE]", and GET {base}/models. Both are served with and without
// a /v1 prefix, since agents differ on whether the base URL carries it.
func init() {
	for _, prefix := range []string{"", "/v1"} {
		Register("POST "+prefix+"/chat/completions", serveOpenAIChat)
		Register("GET "+prefix+"/models", func(s *Server, w http.ResponseWriter, r *http.Request) {
			s.Note(r, "models")
			writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{
				{"id": "scripted", "object": "model", "created": 0, "owned_by": "conformance"},
			}})
		})
	}
}

// openAIText reads a string-or-parts content field as text.
func openAIText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

func serveOpenAIChat(s *Server, w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	raw, err := readJSONBody(r, &body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Format: "openai-chat", Path: r.URL.Path, Model: body.Model, Stream: body.Stream, Body: raw}
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	var system []string
	for _, m := range body.Messages {
		text := openAIText(m.Content)
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "tool":
			// Consecutive tool results form one user turn, as in the
			// Anthropic shape.
			res := ToolResult{CallID: m.ToolCallID, Text: text}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" && len(req.Messages[n-1].ToolResults) > 0 {
				req.Messages[n-1].ToolResults = append(req.Messages[n-1].ToolResults, res)
			} else {
				req.Messages = append(req.Messages, Message{Role: "user", ToolResults: []ToolResult{res}})
			}
		default:
			msg := Message{Role: m.Role, Text: text}
			for _, c := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Input: json.RawMessage(c.Function.Arguments)})
			}
			req.Messages = append(req.Messages, msg)
		}
	}
	req.System = strings.Join(system, "\n")
	rep := s.Answer(r, req)

	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	id := fmt.Sprintf("chatcmpl-%d", len(s.Log()))
	created := time.Now().Unix()
	usage := map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	var calls []map[string]any
	for i, c := range rep.ToolCalls {
		calls = append(calls, map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(c.Input)}})
	}
	if !body.Stream {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		if rep.Thought != "" {
			msg["reasoning_content"] = rep.Thought
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	e := newSSE(w)
	chunk := func(delta map[string]any, finishReason any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason}}}
		if usage != nil {
			c["usage"] = usage
		}
		e.event("", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if rep.Thought != "" {
		chunk(map[string]any{"reasoning_content": rep.Thought}, nil, nil)
	}
	if rep.Text != "" {
		chunk(map[string]any{"content": rep.Text}, nil, nil)
	}
	if len(calls) > 0 {
		chunk(map[string]any{"tool_calls": calls}, nil, nil)
	}
	chunk(map[string]any{}, finish, usage)
	e.event("", "[DONE]")
}
