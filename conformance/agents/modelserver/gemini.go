package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Gemini API (Gemini CLI with GOOGLE_GEMINI_BASE_URL and an API key):
// POST /v1beta/models/{model}:streamGenerateContent?alt=sse, streamed as
// server-sent events each carrying one GenerateContentResponse, and the
// unstreamed :generateContent (the CLI's JSON side calls). Tool calls are
// functionCall parts of the model's content; their results come back as
// functionResponse parts of a user turn.
func init() {
	Register("POST /v1beta/models/{call}", serveGemini)
}

// geminiPart is one part of a Gemini content: text, a function call or a
// function response.
type geminiPart struct {
	Text         string `json:"text,omitempty"`
	Thought      bool   `json:"thought,omitempty"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

// geminiContent is one turn: role "user" or "model".
type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

func serveGemini(s *Server, w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	switch method {
	case "streamGenerateContent", "generateContent":
	case "countTokens":
		s.Note(r, "countTokens")
		writeJSON(w, map[string]any{"totalTokens": 100})
		return
	default:
		s.Note(r, "unknown gemini method: 404")
		http.NotFound(w, r)
		return
	}
	var body struct {
		Contents          []geminiContent `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := readJSON(r, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Format: "gemini", Path: r.URL.Path, Model: model, Stream: method == "streamGenerateContent"}
	if body.SystemInstruction != nil {
		req.System = geminiText(body.SystemInstruction.Parts)
	}
	for _, t := range body.Tools {
		for _, f := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	for _, c := range body.Contents {
		req.Messages = append(req.Messages, geminiMessage(c))
	}
	rep := s.Answer(r, req)

	parts := []map[string]any{}
	if rep.Text != "" {
		parts = append(parts, map[string]any{"text": rep.Text})
	}
	for _, c := range rep.ToolCalls {
		call := map[string]any{"name": c.Name, "args": json.RawMessage(c.Input)}
		if c.ID != "" {
			call["id"] = c.ID
		}
		parts = append(parts, map[string]any{"functionCall": call})
	}
	answer := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]int{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
		"modelVersion":  model,
		"responseId":    fmt.Sprintf("scripted-%d", len(s.Log())),
	}
	if !req.Stream {
		writeJSON(w, answer)
		return
	}
	newSSE(w).event("", answer)
}

// geminiText joins the text parts (thoughts excluded) with newlines.
func geminiText(parts []geminiPart) string {
	var out []string
	for _, p := range parts {
		if p.Text != "" && !p.Thought {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// geminiMessage turns one Gemini content into a neutral message: "model"
// becomes "assistant"; function responses become tool results of a user
// turn, their text the response's "output" (or "error") field, else the
// whole response object.
func geminiMessage(c geminiContent) Message {
	m := Message{Role: "user", Text: geminiText(c.Parts)}
	if c.Role == "model" {
		m.Role = "assistant"
	}
	for _, p := range c.Parts {
		if f := p.FunctionCall; f != nil {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: f.ID, Name: f.Name, Input: f.Args})
		}
		if f := p.FunctionResponse; f != nil {
			var resp struct {
				Output *string `json:"output"`
				Error  *string `json:"error"`
			}
			_ = json.Unmarshal(f.Response, &resp)
			res := ToolResult{CallID: f.ID, Text: string(f.Response)}
			switch {
			case resp.Error != nil:
				res.Text, res.IsError = *resp.Error, true
			case resp.Output != nil:
				res.Text = *resp.Output
			}
			m.ToolResults = append(m.ToolResults, res)
		}
	}
	return m
}
