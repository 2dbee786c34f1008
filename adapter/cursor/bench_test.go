package cursor_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
)

// heapAfterGC is the live heap once the collector has run twice.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// floodUnmatched sends n cursor/task requests with distinct tool call ids,
// none of which ever gets a tool_call, into one session of a Cursor
// connection, and reports the live-heap growth and the entries resident.
func floodUnmatched(b *testing.B, n int, prompt string) {
	b.Helper()
	tr, err := adapter.NewTracker(adapter.Config{})
	if err != nil {
		b.Fatal(err)
	}
	tr.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "cursor-agent"}})
	tr.SessionStarted("s1")
	tr.PromptStarted("s1")
	h := cursor.NewHandler(tr)
	ctx := context.Background()
	tail := `","description":"Summarize src JS files","model":"composer-2.5-fast","agentId":"eaa12f70-7c1e-4f0b-9a55-60506ebd5c78","subagentType":{"custom":{"unspecified":{}}},"durationMs":812,"prompt":"` + prompt + `"}`
	buf := make([]byte, 0, len(tail)+64)

	before := heapAfterGC()
	for i := 0; i < n; i++ {
		buf = append(buf[:0], `{"toolCallId":"tool_`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, tail...)
		if _, err := h.HandleExtensionMethod(ctx, cursor.MethodTask, json.RawMessage(buf)); err != nil {
			b.Fatal(err)
		}
	}
	after := heapAfterGC()

	st, ok := cursor.StatsOf(tr)
	if !ok {
		b.Fatal("not a Cursor connection")
	}
	resident := st.PendingStored - st.PendingMatched - st.PendingEvictedCount - st.PendingEvictedBytes -
		st.PendingEvictedAge - st.PendingEvictedSession - st.PendingSwept
	growth := float64(int64(after)-int64(before)) / (1 << 20)
	b.ReportMetric(growth, "heap-growth-MiB")
	b.ReportMetric(float64(resident), "resident-entries")
	b.ReportMetric(float64(st.PendingEvictedCount+st.PendingEvictedBytes), "evicted")
	if resident > cursor.DefaultMaxPending {
		b.Fatalf("%d entries resident, cap %d", resident, cursor.DefaultMaxPending)
	}
	if growth >= 10 {
		b.Fatalf("heap grew %.2f MiB for %d unmatched requests", growth, n)
	}
	runtime.KeepAlive(tr)
}

// BenchmarkUnmatchedTasks1M: 1,000,000 unmatched cursor/task requests in
// one session keep at most DefaultMaxPending entries resident and grow the
// live heap by less than 10 MiB. Run with -benchtime=1x; each iteration is
// one full flood.
func BenchmarkUnmatchedTasks1M(b *testing.B) {
	prompt := strings.Repeat("Read every .js file under src/ and summarize. ", 6)
	for b.Loop() {
		floodUnmatched(b, 1_000_000, prompt)
	}
}

// BenchmarkUnmatchedTasksMaxPrompt: prompts at MaxPromptBytes hit the byte
// budget (DefaultMaxPendingBytes) long before the count cap.
func BenchmarkUnmatchedTasksMaxPrompt(b *testing.B) {
	prompt := strings.Repeat("p", cursor.MaxPromptBytes)
	for b.Loop() {
		floodUnmatched(b, 2_000, prompt)
	}
}

// BenchmarkTaskMatched measures one cursor/task merged into a live card.
func BenchmarkTaskMatched(b *testing.B) {
	tr, _ := adapter.NewTracker(adapter.Config{})
	tr.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "cursor-agent"}})
	tr.SessionStarted("s1")
	tr.PromptStarted("s1")
	h := cursor.NewHandler(tr)
	var n acp.SessionNotification
	_ = json.Unmarshal([]byte(`{"sessionId":"s1","update":`+frameToolCall+`}`), &n)
	tr.SessionUpdate(n)
	params := json.RawMessage(paramsFull)
	for b.Loop() {
		_, _ = h.HandleExtensionMethod(context.Background(), cursor.MethodTask, params)
	}
}
