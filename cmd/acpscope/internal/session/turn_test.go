package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// deafAfterFirstPrompt is an agent that answers initialize and
// session/new, then stops reading its input for good once the first
// session/prompt arrived, so the client's next write blocks.
func deafAfterFirstPrompt(in io.Reader, out io.Writer) {
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}`+"\n", m.ID)
		case "session/new":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s"}}`+"\n", m.ID)
		case "session/prompt":
			select {} // never reads again
		}
	}
}

// A queued prompt whose write never completes (the agent stopped reading)
// cannot hold the run: the prompts behind it are not sent, the span's
// first turn times out and the agent is stopped, and every turn is
// reported cancelled.
func TestQueuedPromptToADeafAgentEnds(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	go deafAfterFirstPrompt(toAgentR, fromAgentW)
	abort := func() {
		toAgentR.CloseWithError(io.ErrClosedPipe)
		fromAgentW.CloseWithError(io.ErrClosedPipe)
	}
	var ended []string
	cfg := Config{
		Term: view.NewTerminal(io.Discard, false), Timeout: 500 * time.Millisecond, Grace: 0, Abort: abort,
		Requests: slices.Values([]Request{{Method: acp.AgentMethodSessionNew}, {Method: acp.AgentMethodSessionPrompt, Text: "one",
			Queue: []Request{{Method: acp.AgentMethodSessionPrompt, Text: "two"}, {Method: acp.AgentMethodSessionPrompt, Text: "three"}}}}),
		TurnEnded: func(n int, _ acp.StopReason, err error) {
			ended = append(ended, fmt.Sprintf("%d %v", n, errors.Is(err, ErrCancelled)))
		},
	}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), cfg, toAgentW, fromAgentR)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCancelled) {
			t.Fatalf("run: %v, want ErrCancelled", err)
		}
	case <-time.After(30 * time.Second):
		abort()
		t.Fatal("the run hung on a queued prompt the agent never read")
	}
	if want := []string{"1 true", "2 true", "3 true"}; !slices.Equal(ended, want) {
		t.Fatalf("turns ended %q, want %q", ended, want)
	}
}
