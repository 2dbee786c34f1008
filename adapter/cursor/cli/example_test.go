package cli_test

import (
	"context"
	"fmt"
	"log"
	"os/signal"
	"syscall"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
)

// A whole turn: discover the CLI, plan the turn from the stored session
// state, run it, and commit what the result allows.
func ExampleRunner_Run() {
	// Stop signals to the host stop the turn: the runner forwards the stop
	// to the CLI's process group (TERM, then KILL after the grace).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	d := &cli.Discoverer{}
	entry, exe := d.Catalog(ctx)
	if !entry.Available {
		fmt.Println("cursor unavailable:", entry.Reason)
		return
	}

	// Load the session as stored; save it back when normalised.
	state, _, err := cli.LoadSessionState([]byte(`{"cursor_permission_mode":"auto_review"}`))
	if err != nil {
		log.Fatal(err)
	}
	plan := state.PlanTurn(cli.Instructions{SystemPrompt: "Answer briefly."}, "What does main.go do?")

	r := &cli.Runner{Executable: exe}
	res, err := r.Run(ctx, cli.Turn{
		Plan: plan,
		Dir:  "/srv/workspaces/demo",
		OnEvent: func(ev cli.Event) {
			if ev.Kind == cli.EventAssistantText {
				fmt.Print(ev.Text)
			}
		},
		OnSessionID: func(id string) { state.RecordSessionID(id) /* and persist now */ },
	})
	if err != nil {
		log.Fatal(err) // refused before spawning
	}
	state.Commit(plan, res)
	if res.IsError {
		fmt.Println("turn failed:", res.Class, res.Detail)
		return
	}
	fmt.Println(res.FinalText)
}

func ExamplePermissionMode_Flags() {
	for _, m := range cli.PermissionModes() {
		fmt.Println(m, m.Flags())
	}
	// A legacy stored value evaluates as default.
	fmt.Println(cli.PermissionMode("auto_review").Flags())
	// Output:
	// default [--trust]
	// full_access [--trust --force]
	// plan [--trust --mode plan]
	// [--trust]
}

func ExampleParseModelList() {
	out := "Available models\n\nauto - Auto (current, default)\ngpt-5 - GPT-5\n\nTip: use --model <id>\n"
	for _, m := range cli.ParseModelList([]byte(out)) {
		fmt.Printf("%s %q default=%t router=%t\n", m.ID, m.Label, m.Default, m.Router)
	}
	// Output:
	// auto "Auto" default=true router=true
	// gpt-5 "GPT-5" default=false router=false
}
