package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API (Codex through a custom model provider with
// wire_api = "responses"): POST {base}/responses with "stream": true,
// answered with server-sent events, each named by its "type" field:
// response.created, then per output item response.output_item.added,
// (response.output_text.delta for a message), response.output_item.done,
// and response.completed with the usage. Served with and without /v1.
//
// Codex offers some tools inside a "namespace" tool (its multi-agent
// tools); Request.Tools lists the inner names, and a scripted call of a
// namespaced tool is sent back with its namespace, as the agent routes by
// it.
func init() {
	for _, prefix := range []string{"", "/v1"} {
		Register("POST "+prefix+"/responses", serveOpenAIResponses)
	}
}

// responsesTool is one entry of the request's tools: a function, a
// namespace of functions, or a built-in tool (web_search, …).
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

// responsesItem is one input item: a message, a function call or a
// function call's output (other item types are skipped).
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
}

func serveOpenAIResponses(s *Server, w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model        string          `json:"model"`
		Instructions string          `json:"instructions"`
		Input        []responsesItem `json:"input"`
		Tools        []responsesTool `json:"tools"`
		Stream       bool            `json:"stream"`
	}
	raw, err := readJSONBody(r, &body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Format: "openai-responses", Path: r.URL.Path, Model: body.Model, Stream: body.Stream, Body: raw}
	namespace := map[string]string{}
	for _, t := range body.Tools {
		if t.Type == "namespace" {
			for _, inner := range t.Tools {
				req.Tools = append(req.Tools, inner.Name)
				namespace[inner.Name] = t.Name
			}
			continue
		}
		if t.Name != "" {
			req.Tools = append(req.Tools, t.Name)
		} else {
			req.Tools = append(req.Tools, t.Type)
		}
	}
	system := []string{}
	if body.Instructions != "" {
		system = append(system, body.Instructions)
	}
	for _, it := range body.Input {
		switch it.Type {
		case "message", "":
			text := openAIText(it.Content)
			switch it.Role {
			case "system", "developer":
				system = append(system, text)
			default:
				req.Messages = append(req.Messages, Message{Role: it.Role, Text: text})
			}
		case "function_call":
			call := ToolCall{ID: it.CallID, Name: it.Name, Input: json.RawMessage(it.Arguments)}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
				req.Messages[n-1].ToolCalls = append(req.Messages[n-1].ToolCalls, call)
			} else {
				req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{call}})
			}
		case "agent_message":
			// Codex's message between agents (multi_agent_v2): a child's
			// task arrives as one, its text part a header and the task in
			// an "encrypted_content" part (plain text when unencrypted).
			// It is a user turn of the recipient's conversation.
			req.Messages = append(req.Messages, Message{Role: "user", Text: agentMessageText(it.Content)})
		case "function_call_output":
			res := ToolResult{CallID: it.CallID, Text: openAIText(it.Output)}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" && len(req.Messages[n-1].ToolResults) > 0 {
				req.Messages[n-1].ToolResults = append(req.Messages[n-1].ToolResults, res)
			} else {
				req.Messages = append(req.Messages, Message{Role: "user", ToolResults: []ToolResult{res}})
			}
		}
	}
	req.System = strings.Join(system, "\n")
	rep := s.Answer(r, req)

	n := len(s.Log())
	id := fmt.Sprintf("resp_scripted_%d", n)
	var items []map[string]any
	if rep.Text != "" {
		items = append(items, map[string]any{"type": "message", "id": fmt.Sprintf("msg_scripted_%d", n), "role": "assistant",
			"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}})
	}
	for i, c := range rep.ToolCalls {
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_scripted_%d_%d", n, i), "call_id": c.ID,
			"name": c.Name, "arguments": string(c.Input), "status": "completed"}
		if ns := namespace[c.Name]; ns != "" {
			item["namespace"] = ns
		}
		items = append(items, item)
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120,
		"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
	response := func(status string) map[string]any {
		out := map[string]any{"id": id, "object": "response", "model": body.Model, "status": status}
		if status == "completed" {
			out["output"] = items
			out["usage"] = usage
		}
		return out
	}
	if !body.Stream {
		writeJSON(w, response("completed"))
		return
	}
	e := newSSE(w)
	emit := func(v map[string]any) { e.event(v["type"].(string), v) }
	emit(map[string]any{"type": "response.created", "response": response("in_progress")})
	for i, it := range items {
		added := it
		if it["type"] == "message" {
			added = map[string]any{"type": "message", "id": it["id"], "role": "assistant", "status": "in_progress", "content": []any{}}
		}
		emit(map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
		if it["type"] == "message" {
			emit(map[string]any{"type": "response.output_text.delta", "item_id": it["id"], "output_index": i, "content_index": 0, "delta": rep.Text})
		}
		emit(map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	emit(map[string]any{"type": "response.completed", "response": response("completed")})
}

// agentMessageText joins the text and encrypted_content parts of an
// agent_message item's content.
func agentMessageText(raw json.RawMessage) string {
	var parts []struct {
		Text             string `json:"text"`
		EncryptedContent string `json:"encrypted_content"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		for _, t := range []string{p.Text, p.EncryptedContent} {
			if t != "" {
				out = append(out, t)
			}
		}
	}
	return strings.Join(out, "\n")
}
