package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// otlpSink is a collector on loopback that takes every OTLP/HTTP export
// (an empty ExportTraceServiceResponse is a valid answer) and counts the
// bytes it was sent.
func otlpSink(b *testing.B) (url string, received *atomic.Int64) {
	received = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv.URL, received
}

// BenchmarkRunBurstExport is BenchmarkRunBurst (acpscope run on a turn of
// 1,000 subagents × 100 updates each, --no-db) without and with the trace
// export to a collector on loopback, side by side: each iteration runs
// both, in alternating order, so a machine whose load changes weighs on
// both alike. It reports updates/s of each (from the command line to the
// end of the run, the export's shutdown included) and export/off, the
// ratio of the totals; the export keeps at least 0.9 of the throughput.
func BenchmarkRunBurstExport(b *testing.B) {
	const updates, per = 100000, 100
	url, received := otlpSink(b)
	burst := func(export bool) time.Duration {
		args := []string{"run", "--json", "--no-db", "--prompt", "burst", "--cwd", b.TempDir()}
		if export {
			args = append(args, "--otlp", url)
		}
		args = append(args, "--", fakeAgent, "-mode", "burst", "-updates", strconv.Itoa(updates), "-per", strconv.Itoa(per))
		var out, errOut strings.Builder
		start := time.Now()
		code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
		elapsed := time.Since(start)
		if code != exitOK {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
		if n := strings.Count(out.String(), "\n"); n != updates/per {
			b.Fatalf("%d cards in --json, want %d", n, updates/per)
		}
		if export && !strings.Contains(errOut.String(), "traces: 2001 span(s) exported, 0 dropped") {
			b.Fatalf("export report: %s", errOut.String())
		}
		return elapsed
	}
	var off, on time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			off += burst(false)
			on += burst(true)
		} else {
			on += burst(true)
			off += burst(false)
		}
		i++
	}
	b.ReportMetric(float64(updates*i)/off.Seconds(), "updates/s-off")
	b.ReportMetric(float64(updates*i)/on.Seconds(), "updates/s-export")
	b.ReportMetric(off.Seconds()/on.Seconds(), "export/off")
	b.ReportMetric(float64(received.Load())/float64(i), "otlp-bytes/op")
}
