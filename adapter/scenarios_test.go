package adapter_test

import (
	"slices"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

func hasEvent(res *adapter.ReplayResult, id string) bool {
	for _, e := range res.Events {
		if e.ToolCallID == id {
			return true
		}
	}
	return false
}

// Table over the synthetic captures of the agents outside Claude and Cursor
// and of bad input. Each row replays
// testdata/<capture>.jsonl, compares the events with the golden file, then
// checks final payloads, parents, emitted statuses and counters.
func TestOtherAgentScenarios(t *testing.T) {
	runCaptureTable(t, []captureCase{
		{
			name: "42_OpenCodeTask", capture: "opencode_task", dialect: "opencode",
			payloads: map[string]string{
				"call_1": `{"kind":"subagent_task","subagent_task":{"description":"Explore","prompt":"Find X","subagent_type":"general","model":"opencode/big-pickle","child_session_id":"ses_child","result_text":"done"}}`,
			},
		},
		{
			name: "43_AuggieTitle", capture: "auggie", dialect: "auggie",
			payloads: map[string]string{
				"g1": `{"kind":"subagent_task","subagent_task":{"description":"find the bug (trunc...","prompt":"","subagent_type":"explore","result_text":"Bug is at foo.go:42"}}`,
				"n1": `null`, "n2": `null`, "n3": `null`,
			},
		},
		{
			name: "44_CodexMetaFromOtherAgentStaysGeneric", capture: "codex_meta_elsewhere", dialect: "generic",
			payloads: map[string]string{"call-spawn": `null`},
		},
		{
			name: "46_CopilotTitles", capture: "copilot_titles", dialect: "copilot",
			payloads: map[string]string{
				"k1": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","duration_ms":250}}`,
				"k2": `null`,
				"k3": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""}}`,
				"k4": `null`,
			},
		},
		{
			// Frames beyond what gemini-cli 0.61.0 was seen to send: a
			// completion with text content (the result), a failure's text
			// (never a result), a title without a name (no card).
			name: "GeminiResultWhenReported", capture: "gemini_result", dialect: "gemini",
			payloads: map[string]string{
				"invoke_agent__a": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"codebase_investigator","result_text":"The bug is in foo.go"}}`,
				"call_b":          `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"cli_help"}}`,
				"read_c":          `null`,
			},
			statuses: map[string][]adapter.ToolStatus{"call_b": {"in_progress", "error"}},
			cards:    []string{"invoke_agent__a", "call_b"},
		},
		{
			// Child tool calls of parallel Copilot tasks: an agent id is
			// given to a task only when it is the one running foreground
			// task; a failure's text is no result; kind read is no task.
			name: "CopilotChildAttribution", capture: "copilot_children", dialect: "copilot",
			payloads: map[string]string{
				"t1": `{"kind":"subagent_task","subagent_task":{"description":"One","prompt":"do one","subagent_type":"explore","result_text":"one done"}}`,
				"t2": `{"kind":"subagent_task","subagent_task":{"description":"Two","prompt":"do two","subagent_type":"explore","agent_id":"agent-B"}}`,
			},
			parents:  map[string]string{"c1": "", "c2": "t2", "c3": "t2", "c4": ""},
			cards:    []string{"t1", "t2"},
			counters: map[string]int64{adapter.CounterCopilotUnattributed: 1, adapter.CounterBadFields: 1},
		},
		{
			name: "48_52_OpenCodeBackgroundAndDurations", capture: "opencode_background", dialect: "opencode",
			payloads: map[string]string{
				"o1": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","duration_ms":100}}`,
			},
			counters: map[string]int64{adapter.CounterNegativeValues: 1, adapter.CounterBadFields: 1},
		},
		{
			name: "BadInputFieldByField", capture: "generic_bad_input", dialect: "generic",
			payloads: map[string]string{
				"b1":           `{"kind":"subagent_task","subagent_task":{"description":"late","prompt":"ok","subagent_type":""}}`,
				"never-called": `null`,
				"b2":           `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""}}`,
			},
			parents:  map[string]string{"b2": ""},
			statuses: map[string][]adapter.ToolStatus{"b1": {"in_progress", "in_progress", "complete", "complete", "complete"}, "never-called": {"in_progress"}},
			absent:   []string{"", "b3"},
			counters: map[string]int64{
				adapter.CounterBadStatus: 1, adapter.CounterOrphanUpdates: 1, adapter.CounterDuplicateCalls: 1,
				adapter.CounterBadSessionID: 1, adapter.CounterLoweredStatus: 2,
			},
		},
	})
}

// Unknown session-update kinds change nothing; AIR kinds are dropped and
// counted (the parent's title is not touched). The subagent-session form is
// the core's, so a generic agent's subagent_update is a child card like any
// other agent's.
func TestUnknownAndUnhandledKinds(t *testing.T) {
	res := goldentest.Replay(t, "unknown_kinds", adapter.Config{})
	if got := res.Counters[adapter.CounterSubagentFramesOff]; got != 2 {
		t.Errorf("subagent_frames_dropped = %d, want 2 (the AIR kinds)", got)
	}
	if got := res.Counters[adapter.CounterUnknownUpdates]; got != 1 {
		t.Errorf("unknown_updates = %d, want 1", got)
	}
	if len(res.Events) != 2 || res.Events[0].ToolCallID != "c1" || res.Events[1].ToolCallID != "t1" || len(res.Errors) != 0 {
		t.Errorf("events %+v errors %v", res.Events, res.Errors)
	}
}

// captureCase is one capture replayed through a Tracker: the golden file
// beside it holds every event; the fields pin what the case is about.
type captureCase struct {
	name     string
	capture  string            // testdata/<capture>.jsonl
	dialect  string            // the dialect the Tracker must select
	payloads map[string]string // id → final payload JSON ("null" = not a subagent)
	parents  map[string]string
	statuses map[string][]adapter.ToolStatus
	absent   []string // ids that must have no event
	counters map[string]int64
	// cards, when non-nil, is every id whose events carry a payload: a
	// card outside it is a false card.
	cards []string
	// results pins the final result_text of cards (when the whole payload
	// carries ids that differ per capture).
	results map[string]string
}

// runCaptureTable replays each case and checks it.
func runCaptureTable(t *testing.T, cases []captureCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			res := goldentest.Replay(t, tt.capture, adapter.Config{})
			if res.Dialect != tt.dialect {
				t.Errorf("dialect %q, want %q", res.Dialect, tt.dialect)
			}
			for id, want := range tt.payloads {
				if got := goldentest.PayloadJSON(t, goldentest.Last(t, res, id)); got != want {
					t.Errorf("%s payload\n got %s\nwant %s", id, got, want)
				}
			}
			for id, want := range tt.results {
				if e := goldentest.Last(t, res, id); e.Payload == nil || e.Payload.SubagentTask.ResultText != want {
					t.Errorf("%s result: %s, want %q", id, goldentest.PayloadJSON(t, e), want)
				}
			}
			for id, want := range tt.parents {
				if got := goldentest.Last(t, res, id).ParentToolCallID; got != want {
					t.Errorf("%s parent %q, want %q", id, got, want)
				}
			}
			for id, want := range tt.statuses {
				if got := goldentest.Statuses(res, id); !slices.Equal(got, want) {
					t.Errorf("%s statuses %q, want %q", id, got, want)
				}
			}
			for _, id := range tt.absent {
				if hasEvent(res, id) {
					t.Errorf("unexpected event for %q", id)
				}
			}
			if tt.cards != nil {
				if got := subagentIDs(res); !slices.Equal(got, tt.cards) {
					t.Errorf("cards %q, want %q", got, tt.cards)
				}
			}
			for name, want := range tt.counters {
				if got := res.Counters[name]; got != want {
					t.Errorf("counter %s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

// subagentIDs lists, in first-seen order, the ids whose events carry a
// payload.
func subagentIDs(res *adapter.ReplayResult) []string {
	out := []string{}
	for _, e := range res.Events {
		if e.Payload != nil && !slices.Contains(out, e.ToolCallID) {
			out = append(out, e.ToolCallID)
		}
	}
	return out
}
