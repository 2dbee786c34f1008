package adapter_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// FuzzNormalize feeds arbitrary session/update params to a Tracker of every
// dialect, twice (so the second pass merges into held cards), then a prompt
// end and a late update. Nothing may panic (recovered panics count as
// failures) and every event must encode.
func FuzzNormalize(f *testing.F) {
	for _, dir := range []string{"testdata", filepath.Join("testdata", "real", "*"), filepath.Join("claude", "testdata"), filepath.Join("claude", "testdata", "real")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, file := range files {
			addParams(f, file)
		}
	}
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"x","title":"task","rawOutput":{"durationMs":1e308}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"x","rawInput":{"description":[1,{}]}}}`))
	f.Add([]byte(`{"sessionId":"p","update":{"sessionUpdate":"subagent_update","sessionId":"c","capabilities":{"cancel":{}},"state":{"state":"idle","stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}}}`))
	f.Add([]byte(`{"sessionId":"c","update":{"sessionUpdate":"session_message","messageId":"m","senderSessionId":"p","recipientSessionId":"c","senderMessageId":"m","content":[{"type":"text","text":"x"}]}}`))
	f.Add([]byte(`{"sessionId":"p","update":{"sessionUpdate":"session_message_chunk","messageId":"m","content":{"type":"text","text":"y"}}}`))
	f.Add([]byte(`{"sessionId":"p","update":{"sessionUpdate":"subagent_update","sessionId":"p:subagent:t","state":{"state":"idle","stopReason":"error","error":{"code":-32603,"message":"x"}},"capabilities":null}}`))
	f.Add([]byte(`{"sessionId":"p","update":{"sessionUpdate":"tool_call","toolCallId":"w","title":"wait","rawInput":{"senderThreadId":"p","agentsStates":{"t":{"status":"completed","message":"m"}}}}}`))
	// Copilot's read_agent call and its completion (content in rawOutput
	// or only in the content list).
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"r","title":"read_agent","kind":"read","status":"pending","rawInput":{"agent_id":"a","since_turn":0.0}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"r","status":"completed","rawOutput":{"content":"Agent is idle (waiting for messages). agent_id: a, status: idle

[Turn 0]
x
[Turn 1]
y"}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"r","status":"completed","content":[{"type":"content","content":{"type":"text","text":"agent_id: a, status: failed
[Turn 99999999999]
z"}}]}}`))
	f.Fuzz(func(t *testing.T, params []byte) {
		var n acp.SessionNotification
		if json.Unmarshal(params, &n) != nil {
			return
		}
		for _, name := range []string{"generic", "claude", "codex", "opencode", "auggie", "copilot", "gemini", "qwen"} {
			tr, err := adapter.NewTracker(adapter.Config{DialectName: name, MaxCompleted: 2, OnEvent: func(e adapter.Event) {
				if _, err := json.Marshal(e); err != nil {
					t.Fatalf("%s: event does not encode: %v", name, err)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			feedThrice(t, tr, n, name, params)
		}
		// The subagent-session form, opted in: the core's, read through
		// each dialect that adds to it.
		for _, name := range []string{"claude", "codex", "generic"} {
			tr, err := adapter.NewTracker(adapter.Config{DialectName: name, OnEvent: func(e adapter.Event) {
				if _, err := json.Marshal(e); err != nil {
					t.Fatalf("%s+subagents: event does not encode: %v", name, err)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
			feedThrice(t, tr, n, name+"+subagents", params)
		}
	})
}

func feedThrice(t *testing.T, tr *adapter.Tracker, n acp.SessionNotification, name string, params []byte) {
	tr.SessionUpdate(n)
	tr.SessionUpdate(n)
	tr.PromptEnded(string(n.SessionId))
	tr.SessionUpdate(n)
	if p := tr.Counters()[adapter.CounterRecoveredPanics]; p != 0 {
		t.Fatalf("%s: %d panics while normalising %s", name, p, params)
	}
}

// addParams seeds the corpus with the session/update params of a capture.
func addParams(f interface{ Add(...any) }, file string) {
	c, err := capture.ReadFile(file)
	if err != nil {
		return
	}
	for _, e := range c.Entries {
		if m, err := capture.ParseMessage(e.Msg); err == nil && m.Method == acp.ClientMethodSessionUpdate {
			f.Add([]byte(m.Params))
		}
	}
}

// FuzzReplayerFeed feeds arbitrary bytes as JSON-RPC messages from either
// side, around a valid initialize/prompt exchange. Nothing may panic.
func FuzzReplayerFeed(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"a","title":"task"}}}`), true)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`), true)
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":"s1"}}`), false)
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"cursor/task","params":{"toolCallId":"a"}}`), true)
	f.Add([]byte(`[1,2]`), false)
	f.Fuzz(func(t *testing.T, msg []byte, fromAgent bool) {
		tr, err := adapter.NewTracker(adapter.Config{})
		if err != nil {
			t.Fatal(err)
		}
		r := adapter.NewReplayer(tr)
		r.OnExtension = func(string, json.RawMessage, json.RawMessage) {}
		from := adapter.FromClient
		if fromAgent {
			from = adapter.FromAgent
		}
		_ = r.Feed(adapter.FromClient, []byte(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`))
		_ = r.Feed(from, msg)
		_ = r.Feed(adapter.FromAgent, []byte(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`))
		_ = r.Feed(from, msg)
		if p := tr.Counters()[adapter.CounterRecoveredPanics]; p != 0 {
			t.Fatalf("%d panics for %s", p, msg)
		}
	})
}

// FuzzNormalizeSequence feeds a sequence of session/update params (one per
// line) to a Tracker of every dialect, with a prompt end in the middle, so
// that frames meet cards, children and message views made by earlier
// frames. Nothing may panic and every event must encode.
func FuzzNormalizeSequence(f *testing.F) {
	for _, dir := range []string{"testdata", filepath.Join("testdata", "real", "*"), filepath.Join("claude", "testdata"), filepath.Join("claude", "testdata", "real")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, file := range files {
			seed := &seedCollector{}
			addParams(seed, file)
			// Short windows of consecutive frames, not whole files: the
			// fuzzer minimises every new input, and a whole capture costs
			// it most of a short (CI) budget.
			const window = 6
			for i := 0; i < len(seed.params); i += window {
				var lines []byte
				for _, p := range seed.params[i:min(i+window, len(seed.params))] {
					lines = append(append(lines, p...), '\n')
				}
				f.Add(lines)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var frames []acp.SessionNotification
		for _, line := range bytes.Split(data, []byte("\n")) {
			var n acp.SessionNotification
			if json.Unmarshal(line, &n) == nil {
				frames = append(frames, n)
			}
		}
		if len(frames) == 0 {
			return
		}
		for _, name := range []string{"generic", "claude", "codex", "copilot", "gemini", "opencode", "qwen", "claude+subagents"} {
			dialect, declare := name, false
			if name == "claude+subagents" {
				dialect, declare = "claude", true
			}
			tr, err := adapter.NewTracker(adapter.Config{DialectName: dialect, MaxCompleted: 2, MaxActive: 3, MaxBytes: 4096, OnEvent: func(e adapter.Event) {
				if _, err := json.Marshal(e); err != nil {
					t.Fatalf("%s: event does not encode: %v", name, err)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if declare {
				tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
			}
			for i, n := range frames {
				if i == len(frames)/2 {
					tr.PromptEnded(string(n.SessionId))
				}
				tr.ChildText(string(n.SessionId))
				tr.ChildMessage(n)
				tr.HoldText(string(n.SessionId))
				tr.SessionUpdate(n)
			}
			checkHeldChildText(t, tr, frames)
			tr.SessionLoaded(string(frames[0].SessionId))
			for _, n := range frames {
				tr.SessionUpdate(n)
			}
			tr.SessionLoadFinished(string(frames[0].SessionId), false)
			if p := tr.Counters()[adapter.CounterRecoveredPanics]; p != 0 {
				t.Fatalf("%s: %d panics while normalising", name, p)
			}
		}
	})
}

// checkHeldChildText judges the frames' agent text as held text: one
// owner per chunk, each a run of whole chunks.
func checkHeldChildText(t *testing.T, tr *adapter.Tracker, frames []acp.SessionNotification) {
	t.Helper()
	var chunks []string
	for _, n := range frames {
		if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
			chunks = append(chunks, c.Content.Text.Text)
		}
	}
	if owners := tr.HeldChildText(string(frames[0].SessionId), chunks); len(owners) != len(chunks) {
		t.Fatalf("%d owners for %d chunks", len(owners), len(chunks))
	}
}

// FuzzParseCopilotAgentRead checks the read_agent content reader on any
// text: an agent id only with ok, ids and status words without spaces,
// every turn's text trimmed and inside the text.
func FuzzParseCopilotAgentRead(f *testing.F) {
	for _, s := range []string{
		"Agent is idle (waiting for messages). agent_id: c0399ce9-60df-4713-8b1f-8ac4654beeb1, agent_type: general-purpose, status: idle, description: Inspect alpha, elapsed: 0s, total_turns: 1\n\n[Turn 0]\nANSWER-ALPHA",
		"agent_id: a, status: completed\n[Turn 0]\nx\n[Turn 1]\n y \n", "agent_id: \n[Turn 0]\nx", "status: idle", "[Turn 1]", "",
		"agent_id: a\n[Turn 99999999999]\nx", "agent_id: a\n [Turn 2] \n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		read, ok := adapter.ParseCopilotAgentRead(text)
		if ok != (read.AgentID != "") {
			t.Fatalf("%q: ok %t with agent id %q", text, ok, read.AgentID)
		}
		if strings.ContainsAny(read.AgentID+read.Status, " \t\n") || !strings.Contains(text, read.AgentID) || !strings.Contains(text, read.Status) {
			t.Fatalf("%q: bad id %q or status %q", text, read.AgentID, read.Status)
		}
		if !ok && len(read.Turns) > 0 {
			t.Fatalf("%q: turns without an agent", text)
		}
		for _, turn := range read.Turns {
			if turn.N < 0 || turn.Text != strings.TrimSpace(turn.Text) {
				t.Fatalf("%q: bad turn %+v", text, turn)
			}
		}
	})
}

// seedCollector gathers what addParams would add to a corpus.
type seedCollector struct{ params [][]byte }

func (s *seedCollector) Add(args ...any) {
	if b, ok := args[0].([]byte); ok {
		s.params = append(s.params, b)
	}
}

// FuzzQwenChildMessage feeds any session update to a Qwen Code tracker
// that holds a running launch "L": nothing panics, every event encodes, and
// an agent message or thought chunk whose _meta.parentToolCallId is a
// non-empty string is always the child's (never the parent's text), named
// by that id; any other chunk without a Copilot-style rule is the parent's.
func FuzzQwenChildMessage(f *testing.F) {
	addParams(f, filepath.Join("testdata", "real", "qwen", "one.jsonl"))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"x"},"_meta":{"parentToolCallId":"L"}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"parentToolCallId":{"a":1}}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","rawOutput":{"type":"task_execution","status":"completed","result":"r","executionSummary":{"totalDurationMs":1e308,"totalToolCalls":-3}}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"L","_meta":{"toolName":"agent","parentToolCallId":"L"}}}`))
	// A background launch's receipt and the parent's notices that end it.
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","_meta":{"toolName":"agent"},"rawOutput":{"type":"task_execution","executionMode":"background","status":"background"}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"backgroundTask":{"taskId":"t","status":"cancelled","kind":"agent","toolUseId":"L"}}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"backgroundTask":{"taskId":[1],"status":7,"kind":"agent","toolUseId":"L"}}}}`))
	launch := []byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"L","status":"in_progress","title":"Agent: x","kind":"other","rawInput":{"description":"x","prompt":"p"},"_meta":{"toolName":"agent","provenance":"builtin"}}}`)
	f.Fuzz(func(t *testing.T, params []byte) {
		var n acp.SessionNotification
		if json.Unmarshal(params, &n) != nil {
			return
		}
		tr, err := adapter.NewTracker(adapter.Config{DialectName: adapter.DialectQwen, MaxCompleted: 2, OnEvent: func(e adapter.Event) {
			if _, err := json.Marshal(e); err != nil {
				t.Fatalf("event does not encode: %v", err)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		var l acp.SessionNotification
		if err := json.Unmarshal(launch, &l); err != nil {
			t.Fatal(err)
		}
		tr.SessionUpdate(l)
		var meta map[string]any
		switch u := n.Update; {
		case u.AgentMessageChunk != nil:
			meta = u.AgentMessageChunk.Meta
		case u.AgentThoughtChunk != nil:
			meta = u.AgentThoughtChunk.Meta
		}
		id, child := tr.ChildMessage(n)
		if p, ok := meta["parentToolCallId"].(string); ok && p != "" {
			if !child || id != p {
				t.Fatalf("a chunk of child %q judged (%q, %t)", p, id, child)
			}
		} else if child {
			t.Fatalf("an untagged update judged a child's (%q)", id)
		}
		tr.SessionUpdate(n)
		tr.SessionUpdate(n)
		tr.PromptEnded(string(n.SessionId))
		tr.SessionUpdate(n)
		if p := tr.Counters()[adapter.CounterRecoveredPanics]; p != 0 {
			t.Fatalf("%d panics while normalising", p)
		}
	})
}

// FuzzParseGeminiTitle checks the Gemini title parser on any title: a
// name it returns is non-empty, trimmed and inside the title.
func FuzzParseGeminiTitle(f *testing.F) {
	for _, s := range []string{"Delegating to agent 'codebase_investigator'", "Delegating to agent ''", "Delegating to agent 'a'b'", "Delegating to agent ' x '", "Delegating to agent 'x", "task"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, title string) {
		name, ok := adapter.ParseGeminiTitle(title)
		if !ok {
			if name != "" {
				t.Fatalf("%q: name %q without ok", title, name)
			}
			return
		}
		if name == "" || name != strings.TrimSpace(name) || !strings.Contains(title, name) {
			t.Fatalf("%q: bad name %q", title, name)
		}
	})
}

// FuzzUnwrapOpenCodeResult checks the OpenCode answer unwrapping on any
// output: the result is trimmed and taken from the output, an output
// without markup is its own answer, and the state is an attribute value.
func FuzzUnwrapOpenCodeResult(f *testing.F) {
	for _, s := range []string{
		"<task id=\"ses_1\" state=\"completed\">\n<task_result>\nANSWER\n</task_result>\n</task>",
		"<task id=\"x\" state=\"error\">boom</task>", "<task_result>only</task_result>", "<task state=\"a", "<tasks>x</tasks>",
		"<task id=\"a\"><task_result>x</task_result><task_result>y</task_result></task>", "plain", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, output string) {
		result, state := adapter.UnwrapOpenCodeResult(output)
		if result != strings.TrimSpace(result) || !strings.Contains(output, result) {
			t.Fatalf("%q: result %q not a trimmed part of the output", output, result)
		}
		if strings.ContainsAny(state, "\"") || !strings.Contains(output, state) {
			t.Fatalf("%q: bad state %q", output, state)
		}
		if !strings.Contains(output, "<") && result != strings.TrimSpace(output) {
			t.Fatalf("%q: plain output gave %q", output, result)
		}
	})
}
