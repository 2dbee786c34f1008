package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// seedBig stores one session of n subagents, nested, concurrent, in every
// status.
func seedBig(tb testing.TB, s *persistence.Store, session string, n int) {
	tb.Helper()
	ctx := context.Background()
	if err := s.EnsureSession(ctx, session, session); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		f := persistence.Frame{TaskSessionID: session, TaskID: session, ToolCallID: fmt.Sprintf("call-%05d", i),
			ExecutionID: ExecutionID("claude", "r"), Description: fmt.Sprintf("subagent %d", i),
			SubagentType: "general-purpose", TotalTokens: int64(100 + i), DurationMs: int64(1000 + i%700*10),
			IsAsync: i%50 == 7, ObservedAt: t0.Add(time.Duration(i) * 50 * time.Millisecond)}
		if i >= 10 {
			f.ParentToolCallID = fmt.Sprintf("call-%05d", i/10)
		}
		if err := s.Upsert(ctx, f); err != nil {
			tb.Fatal(err)
		}
		if i%97 == 3 {
			continue // stays open
		}
		f.ToolStatus = []string{"completed", "completed", "completed", "failed", "cancelled"}[i%5]
		f.ObservedAt = f.ObservedAt.Add(time.Duration(1+i%200) * 50 * time.Millisecond)
		if err := s.Upsert(ctx, f); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSessionPage5000 is the server time of a 5,000-subagent session
// page (read, lay out, render).
func BenchmarkSessionPage5000(b *testing.B) {
	s := openStore(b)
	seedBig(b, s, "big", 5000)
	h := Handler(s, Options{})
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/session?id=big", nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
		b.ReportMetric(float64(rec.Body.Len()), "bytes/page")
	}
}
