package modelserver

import (
	"encoding/json"
	"net/http"
	"strings"
)

// The Augment backend (Auggie with AUGMENT_SESSION_AUTH naming this server
// as its tenant): POST /chat-stream answers with newline-delimited JSON
// objects {text, nodes, stop_reason}; a tool call is a node of type 5
// carrying tool_use {tool_use_id, tool_name, input_json}. The request holds
// the earlier exchanges in chat_history (request_nodes, response_nodes) and
// the current user turn in message and nodes (type 0 text, type 1 tool
// result). POST /get-models returns the models and the feature flags: the
// sub-agent tools exist only with beachhead_enable_sub_agent_tool, and
// cli_parallel_tools lets several tool calls of one answer run together.
// The remaining routes are the CLI's start-up and telemetry calls, answered
// with the empty shapes it accepts.
func init() {
	Register("POST /chat-stream", serveAugmentChat)
	Register("POST /get-models", func(s *Server, w http.ResponseWriter, r *http.Request) {
		s.Note(r, "augment models and feature flags")
		writeJSON(w, map[string]any{
			"default_model": "scripted",
			"models":        []any{map[string]any{"name": "scripted", "suggested_prefix_char_count": 4096, "suggested_suffix_char_count": 4096}},
			"languages":     []any{},
			"feature_flags": map[string]any{"beachhead_enable_sub_agent_tool": true, "cli_parallel_tools": true},
		})
	})
	empty := map[string]any{
		"/agents/list-remote-tools":        map[string]any{"tools": []any{}},
		"/settings/get-mcp-tenant-configs": map[string]any{},
		"/settings/get-mcp-user-configs":   map[string]any{},
		"/find-missing":                    map[string]any{"unknown_memory_names": []any{}, "nonindexed_blob_names": []any{}},
		"/batch-upload":                    map[string]any{"blob_names": []any{}},
		"/report-error":                    map[string]any{},
		"/record-session-events":           map[string]any{},
		"/record-request-events":           map[string]any{},
		"/record-user-events":              map[string]any{},
		"/client-metrics":                  map[string]any{},
	}
	for path, answer := range empty {
		Register("POST "+path, func(s *Server, w http.ResponseWriter, r *http.Request) {
			s.Note(r, "augment "+strings.TrimPrefix(path, "/"))
			writeJSON(w, answer)
		})
	}
}

// augmentNode is one node of an Augment exchange.
type augmentNode struct {
	Type     int `json:"type"`
	TextNode *struct {
		Content string `json:"content"`
	} `json:"text_node"`
	ToolResultNode *struct {
		ToolUseID string `json:"tool_use_id"`
		Content   string `json:"content"`
		IsError   bool   `json:"is_error"`
	} `json:"tool_result_node"`
	ToolUse *struct {
		ToolUseID string `json:"tool_use_id"`
		ToolName  string `json:"tool_name"`
		InputJSON string `json:"input_json"`
	} `json:"tool_use"`
	Content string `json:"content"`
}

// augmentUser is the user turn of a request message and its nodes (type 0
// text, type 1 tool result; IDE state and other nodes are skipped).
func augmentUser(message string, nodes []augmentNode) Message {
	m := Message{Role: "user"}
	var text []string
	if message != "" {
		text = append(text, message)
	}
	for _, n := range nodes {
		if n.TextNode != nil && n.TextNode.Content != "" {
			text = append(text, n.TextNode.Content)
		}
		if r := n.ToolResultNode; r != nil {
			m.ToolResults = append(m.ToolResults, ToolResult{CallID: r.ToolUseID, Text: r.Content, IsError: r.IsError})
		}
	}
	m.Text = strings.Join(text, "\n")
	return m
}

// augmentAssistant is the assistant turn of a response text and its nodes
// (type 5 tool uses).
func augmentAssistant(text string, nodes []augmentNode) Message {
	m := Message{Role: "assistant", Text: text}
	for _, n := range nodes {
		if u := n.ToolUse; u != nil {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: u.ToolUseID, Name: u.ToolName, Input: json.RawMessage(u.InputJSON)})
		}
	}
	return m
}

func serveAugmentChat(s *Server, w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model       string        `json:"model"`
		Message     string        `json:"message"`
		Nodes       []augmentNode `json:"nodes"`
		ChatHistory []struct {
			RequestMessage string        `json:"request_message"`
			ResponseText   string        `json:"response_text"`
			RequestNodes   []augmentNode `json:"request_nodes"`
			ResponseNodes  []augmentNode `json:"response_nodes"`
		} `json:"chat_history"`
		ToolDefinitions []struct {
			Name string `json:"name"`
		} `json:"tool_definitions"`
	}
	if err := readJSON(r, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Format: "augment", Path: r.URL.Path, Model: body.Model, Stream: true}
	for _, t := range body.ToolDefinitions {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, h := range body.ChatHistory {
		req.Messages = append(req.Messages, augmentUser(h.RequestMessage, h.RequestNodes), augmentAssistant(h.ResponseText, h.ResponseNodes))
	}
	req.Messages = append(req.Messages, augmentUser(body.Message, body.Nodes))
	rep := s.Answer(r, req)

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	line := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		if f != nil {
			f.Flush()
		}
	}
	if rep.Text != "" {
		line(map[string]any{"text": rep.Text})
	}
	stop := 1 // END_TURN
	if len(rep.ToolCalls) > 0 {
		stop = 3 // TOOL_USE_REQUESTED
		var nodes []any
		for i, c := range rep.ToolCalls {
			nodes = append(nodes, map[string]any{"id": i + 1, "type": 5, "content": "",
				"tool_use": map[string]any{"tool_use_id": c.ID, "tool_name": c.Name, "input_json": string(c.Input)}})
		}
		line(map[string]any{"text": "", "nodes": nodes})
	}
	line(map[string]any{"text": "", "stop_reason": stop})
}
