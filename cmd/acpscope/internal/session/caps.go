package session

import (
	"bytes"
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"
)

// Profiles are the named client-capability declarations of editors that
// `run --as` can send: each is merged over what acpscope declares itself.
var Profiles = map[string]json.RawMessage{
	// jetbrains-air is a JetBrains AIR client with native subagent
	// sessions, background subagents and async tasks.
	"jetbrains-air": json.RawMessage(`{"_meta":{"jetbrains":{"air":{"version":1,"capabilities":["nativeSubagentSessions","backgroundSubagents","asyncTasks"]}}}}`),
	// jetbrains-air-nonnative is an AIR client without native subagent
	// sessions.
	"jetbrains-air-nonnative": json.RawMessage(`{"_meta":{"jetbrains":{"air":{"version":1,"capabilities":["backgroundSubagents","asyncTasks"]}}}}`),
}

// MergeCapabilities merges the JSON object over onto the JSON object base:
// an object member merges into the same member of base when both are
// objects, any other value replaces it, and null removes it (a null for a
// member base lacks stays null, so that merging the result over another
// object removes it there). Either may be empty (no object).
func MergeCapabilities(base, over json.RawMessage) (json.RawMessage, error) {
	b, err := object(base, "client capabilities")
	if err != nil {
		return nil, err
	}
	o, err := object(over, "client capabilities")
	if err != nil {
		return nil, err
	}
	mergeInto(b, o)
	return json.Marshal(b)
}

func object(raw json.RawMessage, what string) (map[string]any, error) {
	m := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", what)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a JSON object", what)
	}
	return obj, nil
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		switch sv := v.(type) {
		case nil:
			if _, ok := dst[k]; ok {
				delete(dst, k)
			} else {
				dst[k] = nil // kept, so that a later merge still removes it
			}
		case map[string]any:
			if dv, ok := dst[k].(map[string]any); ok {
				mergeInto(dv, sv)
				continue
			}
			dst[k] = sv
		default:
			dst[k] = v
		}
	}
}

// declaredCapabilities is the initialize request's clientCapabilities:
// base (what acpscope declares) with cfg.ClientCapabilities merged over it,
// or, with cfg.ExactCapabilities, cfg.ClientCapabilities alone, as the
// SDK's type holds them (every ACP field, and `_meta` verbatim).
func declaredCapabilities(cfg Config, base acp.ClientCapabilities) (acp.ClientCapabilities, error) {
	if cfg.ClientCapabilities == nil {
		return base, nil
	}
	raw := cfg.ClientCapabilities
	if !cfg.ExactCapabilities {
		b, err := json.Marshal(base)
		if err != nil {
			return base, err
		}
		if raw, err = MergeCapabilities(b, raw); err != nil {
			return base, err
		}
	}
	var caps acp.ClientCapabilities
	if _, err := object(raw, "client capabilities"); err != nil {
		return base, err
	}
	if err := json.Unmarshal(raw, &caps); err != nil {
		return base, fmt.Errorf("client capabilities: %v", err)
	}
	return caps, nil
}
