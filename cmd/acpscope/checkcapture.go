package main

import (
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// checkCapture refuses a capture that cannot be replayed as a turn: one
// without any message, or one whose recorded answer to initialize,
// session/new or session/prompt does not decode as that result. Such a
// capture is an input error (exit code 2), not a turn that failed.
func checkCapture(c *capture.Capture) error {
	if len(c.Entries) == 0 {
		return fmt.Errorf("the capture holds no messages")
	}
	results := map[string]func(json.RawMessage) error{
		"initialize":     decodeAs[acp.InitializeResponse],
		"session/new":    decodeAs[acp.NewSessionResponse],
		"session/prompt": decodeAs[acp.PromptResponse],
	}
	asked := map[string]string{} // recorded client request id → method
	for _, e := range c.Entries {
		m, err := capture.ParseMessage(e.Msg)
		if err != nil {
			continue
		}
		switch {
		case e.From == capture.FromClient && m.IsRequest():
			if _, ok := results[m.Method]; ok {
				asked[capture.IDKey(m.ID)] = m.Method
			}
		case e.From == capture.FromAgent && m.IsResponse() && !m.Failed():
			method, ok := asked[capture.IDKey(m.ID)]
			if !ok {
				continue
			}
			delete(asked, capture.IDKey(m.ID))
			if err := results[method](m.Result); err != nil {
				return &capture.LineError{Line: e.Line, Reason: fmt.Sprintf("the recorded %s result is not valid: %v", method, err)}
			}
		}
	}
	return nil
}

// decodeAs decodes raw as a T.
func decodeAs[T any](raw json.RawMessage) error {
	var v T
	return json.Unmarshal(raw, &v)
}
