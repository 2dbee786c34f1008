package persistence_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Open a standalone SQLite store, record the frames of one subagent, read
// it back and check the writer's health.
func Example() {
	dir, _ := os.MkdirTemp("", "acp-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := persistence.Open(ctx, "sqlite://"+filepath.Join(dir, "acp.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	// Standalone mode: rows reference their session, so create it.
	if err := store.EnsureSession(ctx, "sess-1", "task-1"); err != nil {
		log.Fatal(err)
	}

	at := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	// The launch, then the completion: one row, merged.
	store.Record(ctx, &persistence.Frame{
		TaskSessionID: "sess-1", TaskID: "task-1", ToolCallID: "toolu_A", ExecutionID: "exec-1",
		Description: "Investigate flaky test", SubagentType: "general-purpose",
		ToolStatus: "in_progress", ObservedAt: at,
	})
	zero := 0
	store.Record(ctx, &persistence.Frame{
		TaskSessionID: "sess-1", TaskID: "task-1", ToolCallID: "toolu_A", ExecutionID: "exec-1",
		Status: "completed", Model: "claude-opus-4-8", TotalTokens: 6789, DurationMs: 12345,
		ToolUseCount: &zero, ToolStatus: "completed", ObservedAt: at.Add(12 * time.Second),
	})

	rows, err := store.ListBySession(ctx, "sess-1")
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		fmt.Println(r.ToolCallID, r.AgentExecutionID, *r.SubagentType, *r.Model, *r.TotalTokens, *r.ToolUseCount, *r.ToolStatus)
		fmt.Println("observed", r.ObservedAt.Format(time.RFC3339), "settled", r.SettledAt.Format(time.RFC3339))
	}
	fmt.Printf("%+v\n", store.Counters())

	health, err := store.Health(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(health.State, health.Compared, health.NoPreCaptureCoverage)
	// Output:
	// toolu_A exec-1 general-purpose claude-opus-4-8 6789 0 completed
	// observed 2026-08-12T10:00:00Z settled 2026-08-12T10:00:12Z
	// {Attempted:2 Persisted:2 SkippedNoIdentity:0 AnomalousValue:0 Failed:0 UnknownExecution:0}
	// fully_activated true true
}
