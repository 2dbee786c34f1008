package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
)

// BenchmarkSessionPage5000 is the server time of a 5,000-subagent session
// page (read, lay out, render).
func BenchmarkSessionPage5000(b *testing.B) {
	s := openStore(b)
	webtest.SeedSubagents(b, s, "big", ExecutionID("claude", "r"), 5000)
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
