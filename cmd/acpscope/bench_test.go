package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/proctest"
)

// BenchmarkLoadReplayPipeline is the end-to-end pipeline on a long
// session/load: the fake agent (a separate process) replays 100,000
// session/update notifications as the session's history, 100 to each of
// 1,000 Claude-style subagents, as fast as the pipe takes them, and
// acpscope's client stack (the SDK connection, the Tracker, the view and
// the SQLite store, as `acpscope run` builds them) takes them in.
//
// It reports updates/s, peak-rss-MiB (VmHWM of /proc/self/status: this
// process only, the client side; the agent runs in its own process; 0
// where /proc is absent), rows (subagent rows stored) and lost (0, or the
// benchmark fails): every update reached the Tracker as a tool frame, and
// every card is stored completed with no store write failed.
func BenchmarkLoadReplayPipeline(b *testing.B) {
	const updates, per = 100000, 100
	const cards = updates / per
	for b.Loop() {
		db := filepath.Join(b.TempDir(), "scope.db")
		sink, closeStore, err := openSink(context.Background(), outputFlags{db: db})
		if err != nil {
			b.Fatal(err)
		}
		agent, err := session.StartAgent([]string{fakeAgent, "-mode", "burst", "-updates", strconv.Itoa(updates), "-per", strconv.Itoa(per)}, b.TempDir(), os.Stderr)
		if err != nil {
			b.Fatal(err)
		}
		cfg := session.Config{
			Term: view.NewTerminal(io.Discard, false), Sink: sink.record, Policy: session.PolicyReject, Cwd: "/",
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
		const sid = "loaded-session"
		start := time.Now()
		tracker.SessionLoaded(sid)
		_, err = conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: sid, Cwd: "/", McpServers: []acp.McpServer{}})
		tracker.SessionLoadFinished(sid, err == nil)
		tracker.Flush()
		elapsed := time.Since(start)
		if err != nil {
			b.Fatalf("session/load: %v", err)
		}
		_ = conn.Close()
		agent.Stop()
		frames := tracker.Counters()[adapter.CounterFrames]
		rows, err := sink.store.ListBySession(ctx, sid)
		if err != nil {
			b.Fatal(err)
		}
		completed := 0
		for _, r := range rows {
			if r.AgentStatus != nil && *r.AgentStatus == "completed" {
				completed++
			}
		}
		failed := sink.store.Counters().Failed
		closeStore()
		lost := int64(updates) - frames
		if lost != 0 || completed != cards || len(rows) != cards || failed != 0 {
			b.Fatalf("lost %d updates; %d rows stored, %d completed, want %d; %d store writes failed", lost, len(rows), completed, cards, failed)
		}
		b.ReportMetric(float64(updates)/elapsed.Seconds(), "updates/s")
		b.ReportMetric(float64(len(rows)), "rows")
		b.ReportMetric(float64(lost), "lost")
	}
	b.ReportMetric(peakRSSMiB(), "peak-rss-MiB")
}

// peakRSSMiB is this process's peak resident set (VmHWM) in MiB.
func peakRSSMiB() float64 { return proctest.PeakRSSMiB() }
