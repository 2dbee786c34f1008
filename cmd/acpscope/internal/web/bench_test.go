package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
)

// BenchmarkSessionPage5000 is the server time of a 5,000-subagent session
// page showing all of them (read, lay out, render): each run on a new
// server, which has not kept the session's view.
func BenchmarkSessionPage5000(b *testing.B) {
	s := openStore(b)
	webtest.SeedSubagents(b, s, "big", ExecutionID("claude", "r"), 5000)
	b.ResetTimer()
	for b.Loop() {
		h := Handler(s, Options{})
		req := httptest.NewRequest(http.MethodGet, "/session?id=big&limit=5000", nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
		b.ReportMetric(float64(rec.Body.Len()), "bytes/page")
	}
}
