package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/storesink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/proctest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// benchStores are the stores the pipeline benchmarks compare, side by
// side in one run: none (--no-db), SQLite in a temporary directory, and
// PostgreSQL on a fresh schema (skipped without ACP_TEST_POSTGRES_DSN).
var benchStores = []struct {
	name string
	dsn  func(b *testing.B) string
}{
	{"no-db", func(*testing.B) string { return "" }},
	{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "scope.db") }},
	{"postgres", func(b *testing.B) string { return postgresDSN(b) }},
}

// BenchmarkLoadReplayPipeline is the end-to-end pipeline on a long
// session/load: the fake agent (a separate process) replays 100,000
// session/update notifications as the session's history, 100 to each of
// 1,000 Claude-style subagents, as fast as the pipe takes them, and
// acpscope's client stack (the SDK connection, the Tracker, the view and
// the store, as `acpscope run` builds them) takes them in, until the
// store's writer has flushed: the time includes storing every card.
//
// It reports updates/s, peak-rss-MiB (VmHWM of /proc/self/status: this
// process only, the client side; the agent runs in its own process; 0
// where /proc is absent), rows (subagent rows stored) and lost (0, or the
// benchmark fails): every update reached the Tracker as a tool frame, and
// with a store every card is stored completed with no store write failed.
func BenchmarkLoadReplayPipeline(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) { benchLoadReplay(b, st.dsn(b)) })
	}
}

func benchLoadReplay(b *testing.B, dsn string) {
	const updates, per = 100000, 100
	const cards = updates / per
	for b.Loop() {
		sink, err := openSink(context.Background(), outputFlags{db: dsn, noDB: dsn == ""}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		agent, err := session.StartAgent([]string{fakeAgent, "-mode", "burst", "-updates", strconv.Itoa(updates), "-per", strconv.Itoa(per)}, b.TempDir(), os.Stderr)
		if err != nil {
			b.Fatal(err)
		}
		term := view.NewTerminal(io.Discard, false)
		cfg := session.Config{
			Term: term, Sink: sinks(term, sink, nil), Policy: session.PolicyReject, Cwd: "/",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		tracker, conn, err := session.NewClientStack(cfg, agent.Stdin, agent.Stdout)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		initReq := acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}
		initResp, err := conn.Initialize(ctx, initReq)
		if err != nil || !initResp.AgentCapabilities.LoadSession {
			b.Fatalf("initialize: %v (loadSession %v)", err, initResp.AgentCapabilities.LoadSession)
		}
		tracker.Initialize(&initReq, &initResp)
		sid := "loaded-session-" + storesink.RandomID()
		start := time.Now()
		tracker.SessionLoaded(sid)
		_, err = conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(sid), Cwd: "/", McpServers: []acp.McpServer{}})
		tracker.SessionLoadFinished(sid, err == nil)
		tracker.Flush()
		if ferr := sink.Flush(ctx); ferr != nil {
			b.Fatal(ferr)
		}
		elapsed := time.Since(start)
		if err != nil {
			b.Fatalf("session/load: %v", err)
		}
		_ = conn.Close()
		agent.Stop()
		lost := int64(updates) - tracker.Counters()[adapter.CounterFrames]
		rows := checkStoredCards(b, sink, sid, cards)
		sink.close()
		if lost != 0 {
			b.Fatalf("lost %d updates", lost)
		}
		b.ReportMetric(float64(updates)/elapsed.Seconds(), "updates/s")
		b.ReportMetric(float64(rows), "rows")
		b.ReportMetric(float64(lost), "lost")
	}
	b.ReportMetric(peakRSSMiB(), "peak-rss-MiB")
}

// peakRSSMiB is this process's peak resident set (VmHWM) in MiB.
func peakRSSMiB() float64 { return proctest.PeakRSSMiB() }

// checkStoredCards fails b unless the sink's store (none: nothing to
// check) holds want rows for session sid, every one settled completed,
// with no write failed; it returns the rows counted.
func checkStoredCards(b *testing.B, sink *storeSink, sid string, want int) int {
	b.Helper()
	if sink.store == nil {
		return 0
	}
	rows, err := sink.store.ListBySession(context.Background(), sid)
	if err != nil {
		b.Fatal(err)
	}
	completed := 0
	for _, r := range rows {
		if r.AgentStatus != nil && *r.AgentStatus == "completed" && r.ToolStatus != nil && *r.ToolStatus == "complete" && r.SettledAt != nil {
			completed++
		}
	}
	if failed := sink.store.Counters().Failed; completed != want || len(rows) != want || failed != 0 {
		b.Fatalf("%d rows stored, %d settled completed, want %d; %d store writes failed", len(rows), completed, want, failed)
	}
	return len(rows)
}

// runStoredCards is the number of cards the run stored in dsn (0 for
// none); it fails b unless they are all in one complete session.
func runStoredCards(b *testing.B, dsn string) int {
	b.Helper()
	if dsn == "" {
		return 0
	}
	s, err := persistence.OpenReadOnly(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sums, err := s.ListSessions(context.Background(), persistence.SessionFilter{Limit: 1})
	if err != nil || len(sums) != 1 || sums[0].Status != persistence.SessionComplete {
		b.Fatalf("stored sessions %+v (%v), want the newest complete", sums, err)
	}
	return sums[0].Cards
}

// BenchmarkRunBurst is `acpscope run` on a turn of 1,000 subagents × 100
// updates each (the fake agent's burst), with each store: from the
// command line to the end of the run, every card stored before it
// reports. It reports updates/s and rows, verified settled.
func BenchmarkRunBurst(b *testing.B) {
	const updates, per = 100000, 100
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			dsn := st.dsn(b)
			for b.Loop() {
				args := []string{"run", "--json", "--prompt", "burst", "--cwd", b.TempDir()}
				if dsn == "" {
					args = append(args, "--no-db")
				} else {
					args = append(args, "--db", dsn)
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
				b.ReportMetric(float64(updates)/elapsed.Seconds(), "updates/s")
				b.ReportMetric(float64(runStoredCards(b, dsn)), "rows")
			}
		})
	}
}
