package adapter_test

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// permutations calls fn with every ordering of n items.
func permutations(n int, fn func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			fn(p)
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

// Every arrival order of a Claude subagent's frames (call, refinement,
// progress, hook, completion) gives one final payload, and no emitted tool
// status is lower than an earlier one.
func TestAnyOrderSamePayloadMonotonicStatus(t *testing.T) {
	frames := []string{
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"A","title":"Task","status":"pending","_meta":{"claudeCode":{"toolName":"Agent"}},"rawInput":{}}}`,
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"A","_meta":{"claudeCode":{"toolName":"Agent"}},"rawInput":{"description":"D","prompt":"P","subagent_type":"explore"}}}`,
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"A","status":"in_progress","_meta":{"claudeCode":{"toolName":"Agent"}}}}`,
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"A","_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"agentId":"x","agentType":"general","totalTokens":5,"totalToolUseCount":0,"content":[{"type":"text","text":"R"}]}}}}}`,
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"A","status":"completed","rawOutput":[{"type":"text","text":"R"}],"_meta":{"claudeCode":{"toolName":"Agent"}}}}`,
	}
	parsed := make([]acp.SessionNotification, len(frames))
	for i, f := range frames {
		parsed[i] = notif(t, f)
	}
	rank := map[adapter.ToolStatus]int{"pending": 1, "in_progress": 2, "complete": 3}
	var want string
	permutations(len(frames), func(order []int) {
		tr, c := newTracker(t, adapter.Config{DialectName: "claude"})
		for _, i := range order {
			tr.SessionUpdate(parsed[i])
		}
		ev := c.all()
		hi := 0
		for _, e := range ev {
			if r := rank[e.Status]; r > 0 {
				if r < hi {
					t.Fatalf("order %v: status went back to %s", order, e.Status)
				}
				hi = r
			}
		}
		if hi != 3 {
			t.Fatalf("order %v: never completed", order)
		}
		b, _ := json.Marshal(ev[len(ev)-1].Payload)
		if want == "" {
			want = string(b)
		} else if string(b) != want {
			t.Fatalf("order %v: payload\n%s\nwant\n%s", order, b, want)
		}
	})
	const final = `{"kind":"subagent_task","subagent_task":{"description":"D","prompt":"P","subagent_type":"explore","agent_id":"x","total_tokens":5,"tool_use_count":0,"result_text":"R"},"background_work":{"kind":"subagent","work_id":"x","ended":true}}`
	if want != final {
		t.Errorf("final payload\n got %s\nwant %s", want, final)
	}
}
