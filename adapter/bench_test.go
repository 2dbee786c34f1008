package adapter_test

import (
	"fmt"
	"runtime"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// BenchmarkClaudeSubagentLifecycle measures one Claude legacy subagent per
// op: tool_call, refinement, hook toolResponse, completion, prompt end.
func BenchmarkClaudeSubagentLifecycle(b *testing.B) {
	frames := []acp.SessionNotification{
		notif(b, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"A","title":"Task","status":"pending","_meta":{"claudeCode":{"toolName":"Agent"}},"rawInput":{}}}`),
		notif(b, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"A","_meta":{"claudeCode":{"toolName":"Agent"}},"rawInput":{"description":"D","prompt":"P","subagent_type":"explore"}}}`),
		notif(b, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"A","_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"agentId":"x","status":"completed","totalTokens":5,"totalDurationMs":9,"totalToolUseCount":3,"content":[{"type":"text","text":"R"}]}}}}}`),
		notif(b, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"A","status":"completed","_meta":{"claudeCode":{"toolName":"Agent"}}}}`),
	}
	events := 0
	tr, err := adapter.NewTracker(adapter.Config{DialectName: "claude", OnEvent: func(adapter.Event) { events++ }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range frames {
			tr.SessionUpdate(f)
		}
		tr.PromptEnded("s1")
	}
	b.ReportMetric(float64(len(frames)), "frames/op")
}

// BenchmarkUnfinishedToolCallsStayBounded feeds tool calls that never
// complete, each with a new id: the Tracker keeps at most MaxActive cards
// and its heap stays flat.
func BenchmarkUnfinishedToolCallsStayBounded(b *testing.B) {
	tr, err := adapter.NewTracker(adapter.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]acp.SessionNotification, 1024)
	for i := range ids {
		ids[i] = toolCall(b, "s1", fmt.Sprintf("t%d", i), "task")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		n := ids[i%len(ids)]
		n.Update.ToolCall.ToolCallId = acp.ToolCallId(fmt.Sprintf("t%d", i))
		tr.SessionUpdate(n)
		i++
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	resident := 0
	tr.Do(func(tx *adapter.Tx) {
		for j := max(0, i-adapter.DefaultMaxActive-10); j < i; j++ {
			if _, ok := tx.Card("s1", fmt.Sprintf("t%d", j)); ok {
				resident++
			}
		}
	})
	if resident > adapter.DefaultMaxActive {
		b.Fatalf("%d cards resident, bound %d", resident, adapter.DefaultMaxActive)
	}
	b.ReportMetric(float64(resident), "cards-resident")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-growth-MiB")
}
