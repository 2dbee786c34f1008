package cli_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli/acpupdate"
)

// A CLI turn end to end: fake CLI → runner → ACP session notifications.
func TestCLITurnAsACPUpdates(t *testing.T) {
	r := cli.FakeRunner(t, "out "+cli.LineInit, "out "+cli.LineReadStart, "out "+cli.LineReadDone,
		"out "+cli.LineShellRej, "out "+cli.LineAssistant, "out "+cli.LineResultOK)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []acp.SessionNotification
	m := acpupdate.New("acp-session")
	res, err := r.Run(ctx, cli.Turn{
		Plan:    cli.SessionState{}.PlanTurn(cli.Instructions{}, "hi"),
		Dir:     t.TempDir(),
		OnEvent: m.Forward(func(n acp.SessionNotification) { got = append(got, n) }),
	})
	if err != nil || !res.Success() {
		t.Fatalf("res = %+v err %v", res, err)
	}
	got = append(got, m.Finish(res)...)
	var kinds []string
	for _, n := range got {
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				Kind          string `json:"kind"`
				Status        string `json:"status"`
			} `json:"update"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.SessionID != "acp-session" {
			t.Fatalf("notification %s", b)
		}
		kinds = append(kinds, v.Update.SessionUpdate+"/"+v.Update.Kind+"/"+v.Update.Status)
	}
	want := []string{
		"tool_call/read/in_progress",
		"tool_call_update//completed",
		"tool_call/execute/failed", // the rejected shell call, never announced
		"agent_message_chunk//",
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("updates = %v, want %v", kinds, want)
	}
}
