package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Scenario is one scripted conversation between the harness (playing the
// peer) and a real SDK connection. Scenarios live as data in
// scenarios/*.json; each file holds a JSON array of them.
type Scenario struct {
	// Name identifies the scenario in transcripts, the table and the allowlist.
	Name string `json:"name"`
	// Doc says what the scenario checks, for readers of the data files.
	Doc string `json:"doc"`
	// Side is the SDK side under test: "client" builds a ClientSideConnection
	// (the harness plays the agent), "agent" an AgentSideConnection.
	Side string `json:"side"`
	// Profile chooses which optional interfaces the scripted implementation
	// has: "full" (default: experimental, loader, extension handler),
	// "noext" (everything but ExtensionMethodHandler), "minimal" (only the
	// required interface).
	Profile string `json:"profile"`
	// Handlers scripts what the implementation does per inbound method. The
	// value is a Behaviour or an array of them used one per invocation (the
	// last one repeats). Methods without an entry return the zero response.
	Handlers map[string]json.RawMessage `json:"handlers"`
	// Steps run in order.
	Steps []Step `json:"steps"`
}

// Behaviour scripts one handler invocation.
type Behaviour struct {
	// Result is decoded into the method's response type and returned.
	Result json.RawMessage `json:"result"`
	// Error returns this *RequestError (code, message, data).
	Error json.RawMessage `json:"error"`
	// Wrapped returns the Error wrapped with fmt.Errorf("…: %w").
	Wrapped bool `json:"wrapped"`
	// ErrorText returns errors.New(ErrorText).
	ErrorText string `json:"errorText"`
	// Panic panics with this value.
	Panic string `json:"panic"`
	// Block waits for the handler's context to end and returns its error.
	Block bool `json:"block"`
	// DelayMs sleeps this many milliseconds first (a slow handler).
	DelayMs int `json:"delayMs"`
	// Actions are outbound calls made, in order, before returning.
	Actions []Step `json:"actions"`
}

// Step is one instruction of a script. Exactly one of its verbs is set.
type Step struct {
	// Send writes this JSON value, compacted, plus "\n" to the SDK.
	Send json.RawMessage `json:"send,omitempty"`
	// SendRaw writes this text verbatim plus "\n" (unless NoNewline).
	SendRaw *string `json:"sendRaw,omitempty"`
	// SendBig writes a frame of about this many bytes: a session/update
	// notification whose text is padded to the size.
	SendBig int `json:"sendBig,omitempty"`
	// Repeat writes the Send frame this many times (default once).
	Repeat int `json:"repeat,omitempty"`
	// NoNewline suppresses the trailing newline of SendRaw.
	NoNewline bool `json:"noNewline,omitempty"`
	// Call makes an outbound call on the SDK connection (method name, or
	// "$ext"/"$notifyExt" with Method for CallExtension/NotifyExtension).
	Call string `json:"call,omitempty"`
	// Method is the extension method for "$ext"/"$notifyExt".
	Method string `json:"method,omitempty"`
	// Params are decoded (numbers kept exact) into the request type.
	Params json.RawMessage `json:"params,omitempty"`
	// As names the call so Cancel and Await can refer to it (default: Call).
	As string `json:"as,omitempty"`
	// Cancel ends the context of the named running call.
	Cancel string `json:"cancel,omitempty"`
	// Await waits until the named call has returned.
	Await string `json:"await,omitempty"`
	// Expect waits until this many more wire lines came out of the SDK.
	Expect int `json:"expect,omitempty"`
	// Unordered sorts the lines of this Expect step (concurrent replies).
	Unordered bool `json:"unordered,omitempty"`
	// Events waits until this many more events were recorded.
	Events int `json:"events,omitempty"`
	// Close ends the harness→SDK stream (EOF) and waits for Done().
	Close bool `json:"close,omitempty"`
}

// loadScenarios reads every scenarios/*.json file of dir, sorted by file
// name, and checks that names are unique and steps well formed.
func loadScenarios(dir string) ([]Scenario, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []Scenario
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var list []Scenario
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&list); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, s := range list {
			if s.Name == "" {
				return nil, fmt.Errorf("%s: scenario without a name", f)
			}
			if prev, dup := seen[s.Name]; dup {
				return nil, fmt.Errorf("%s: scenario %q already defined in %s", f, s.Name, prev)
			}
			seen[s.Name] = f
			if s.Side != "client" && s.Side != "agent" {
				return nil, fmt.Errorf("%s: scenario %q: side must be client or agent", f, s.Name)
			}
			switch s.Profile {
			case "", "full", "noext", "minimal":
			default:
				return nil, fmt.Errorf("%s: scenario %q: unknown profile %q", f, s.Name, s.Profile)
			}
			all = append(all, s)
		}
	}
	return all, nil
}

// behaviours decodes the scripted behaviours of one method.
func (s *Scenario) behaviours(method string) ([]Behaviour, error) {
	raw, ok := s.Handlers[method]
	if !ok {
		return nil, nil
	}
	trimmed := strings.TrimSpace(string(raw))
	if strings.HasPrefix(trimmed, "[") {
		var list []Behaviour
		if err := strictDecode(raw, &list); err != nil {
			return nil, fmt.Errorf("handlers[%s]: %w", method, err)
		}
		return list, nil
	}
	var one Behaviour
	if err := strictDecode(raw, &one); err != nil {
		return nil, fmt.Errorf("handlers[%s]: %w", method, err)
	}
	return []Behaviour{one}, nil
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
