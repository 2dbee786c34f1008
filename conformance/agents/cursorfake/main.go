// Command cursorfake is a Cursor-style ACP agent for the tap conformance
// test (conformance/agents/tap_test.go): it plays the agent side of a
// recorded Cursor capture over its standard input and output, through the
// scripted agent of internal/replay, so that a live client gets the
// capture's subagent fan-out with its cursor/task requests and must answer
// them before the turn goes on.
//
// Usage: cursorfake CAPTURE
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/internal/replay"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cursorfake CAPTURE")
		os.Exit(2)
	}
	c, err := capture.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "cursorfake:", err)
		os.Exit(2)
	}
	if err := replay.NewAgent(c).Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cursorfake:", err)
		os.Exit(1)
	}
}
