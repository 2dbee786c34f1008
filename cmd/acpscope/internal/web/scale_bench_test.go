package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/internal/proctest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// The web figures of a large session: run under ACPSCOPE_WEB_SCALE=1 (make
// web-bench), as seeding 100,000 cards takes a while. ACPSCOPE_WEB_CARDS
// sets the session's size (default 100,000).

var (
	scaleOnce  sync.Once
	scaleDB    string
	scaleCards int
)

// scaleStore seeds the large session "big" and a small one "small" once
// per process, and opens the store read-only, as acpscope web does.
func scaleStore(b *testing.B) *persistence.Store {
	b.Helper()
	if os.Getenv("ACPSCOPE_WEB_SCALE") != "1" {
		b.Skip("ACPSCOPE_WEB_SCALE=1 runs the large-session figures (make web-bench)")
	}
	scaleOnce.Do(func() {
		scaleCards = 100000
		if n, err := strconv.Atoi(os.Getenv("ACPSCOPE_WEB_CARDS")); err == nil && n > 0 {
			scaleCards = n
		}
		dir, err := os.MkdirTemp("", "acpscope-web-scale")
		if err != nil {
			b.Fatal(err)
		}
		scaleDB = filepath.Join(dir, "scale.db")
		s, err := persistence.Open(context.Background(), "sqlite://"+scaleDB, persistence.WithSubagentText())
		if err != nil {
			b.Fatal(err)
		}
		webtest.SeedSubagents(b, s, "big", ExecutionID("claude", "r"), scaleCards)
		webtest.SeedSubagents(b, s, "small", ExecutionID("claude", "r"), 20)
		s.Close()
	})
	s, err := persistence.OpenReadOnly(context.Background(), "sqlite://"+scaleDB, persistence.WithSubagentText())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func fetch(b *testing.B, c *http.Client, u string) (int, time.Duration) {
	start := time.Now()
	res, err := c.Get(u)
	if err != nil {
		b.Error(err)
		return 0, 0
	}
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Errorf("%s: %d", u, res.StatusCode)
	}
	return int(n), time.Since(start)
}

// BenchmarkSessionParallel8 is 8 parallel requests for the large session
// on a server that has not read it yet (4 pages, 4 JSON windows):
// the peak resident set of the whole process meanwhile (peak-MiB), the
// largest response (max-bytes) and the slowest request (max-ms).
func BenchmarkSessionParallel8(b *testing.B) {
	s := scaleStore(b)
	for b.Loop() {
		srv := httptest.NewServer(Handler(s, Options{}))
		proctest.ResetPeakRSS()
		var mu sync.Mutex
		var most int
		var slowest time.Duration
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				u := srv.URL + "/session?id=big"
				if i%2 == 1 {
					u = fmt.Sprintf("%s/api/session?id=big&offset=%d", srv.URL, i*DefaultWindow)
				}
				n, d := fetch(b, srv.Client(), u)
				mu.Lock()
				most, slowest = max(most, n), max(slowest, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		b.ReportMetric(proctest.PeakRSSMiB(), "peak-MiB")
		b.ReportMetric(float64(most), "max-bytes")
		b.ReportMetric(float64(slowest.Milliseconds()), "max-ms")
		srv.Close()
	}
}

// BenchmarkPollers100 is 100 pollers of the large session's changes, each
// asking again as soon as answered, for 5 s, with one poller of a small
// session and a page reader of the large one among them: the pollers' p99
// and median, and the small session's p99.
func BenchmarkPollers100(b *testing.B) {
	s := scaleStore(b)
	for b.Loop() {
		srv := httptest.NewServer(Handler(s, Options{}))
		tr := &http.Transport{MaxIdleConnsPerHost: 128}
		c := &http.Client{Transport: tr}
		deadline := time.Now().Add(5 * time.Second)
		var mu sync.Mutex
		var big, small []time.Duration
		var wg sync.WaitGroup
		poll := func(u string, into *[]time.Duration) {
			for time.Now().Before(deadline) {
				_, d := fetch(b, c, u)
				mu.Lock()
				*into = append(*into, d)
				mu.Unlock()
			}
		}
		for range 100 {
			wg.Go(func() { poll(srv.URL+"/api/changes?id=big", &big) })
		}
		wg.Go(func() { poll(srv.URL+"/api/changes?id=small", &small) })
		wg.Go(func() {
			var pages []time.Duration
			poll(srv.URL+"/api/session?id=big", &pages)
		})
		wg.Wait()
		b.ReportMetric(quantile(big, 0.99), "p99-ms")
		b.ReportMetric(quantile(big, 0.5), "p50-ms")
		b.ReportMetric(quantile(small, 0.99), "small-p99-ms")
		b.ReportMetric(float64(len(big)), "polls")
		tr.CloseIdleConnections()
		srv.Close()
	}
}

func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
}
