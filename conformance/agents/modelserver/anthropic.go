package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API (Claude Code through ANTHROPIC_BASE_URL):
// POST /v1/messages, streamed as server-sent events when "stream" is true,
// and POST /v1/messages/count_tokens.
func init() {
	Register("POST /v1/messages", serveAnthropic)
	Register("POST /v1/messages/count_tokens", func(s *Server, w http.ResponseWriter, r *http.Request) {
		s.Note(r, "count_tokens")
		writeJSON(w, map[string]int{"input_tokens": 100})
	})
}

// anthropicBlock is one content block of a request message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// anthropicText reads a string-or-blocks field as text.
func anthropicText(raw json.RawMessage) (string, []anthropicBlock) {
	if len(raw) == 0 {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n"), blocks
}

func serveAnthropic(s *Server, w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Stream   bool            `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	raw, err := readJSONBody(r, &body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Format: "anthropic", Path: r.URL.Path, Model: body.Model, Stream: body.Stream, Body: raw}
	req.System, _ = anthropicText(body.System)
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range body.Messages {
		text, blocks := anthropicText(m.Content)
		msg := Message{Role: m.Role, Text: text}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
			case "tool_result":
				t, _ := anthropicText(b.Content)
				msg.ToolResults = append(msg.ToolResults, ToolResult{CallID: b.ToolUseID, Text: t, IsError: b.IsError})
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	rep := s.Answer(r, req)
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		json.NewEncoder(w).Encode(map[string]any{"type": "error",
			"error": map[string]any{"type": "invalid_request_error", "message": rep.Text}})
		return
	}

	stop := "end_turn"
	if len(rep.ToolCalls) > 0 {
		stop = "tool_use"
	}
	id := fmt.Sprintf("msg_%d", len(s.Log()))
	usage := map[string]int{"input_tokens": 100, "output_tokens": 20}
	if !body.Stream {
		var content []map[string]any
		if rep.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": rep.Text})
		}
		for _, c := range rep.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Input})
		}
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": body.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	e := newSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": body.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1},
	}})
	index := 0
	if rep.Text != "" {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": rep.Text}})
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, c := range rep.ToolCalls {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(c.Input)}})
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 20}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}
