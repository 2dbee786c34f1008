//go:build go1.25

package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestWhySynctestBubblesInARow is the consumer's reproducer (issue 22): two
// testing/synctest bubbles in a row, each with a pair of connections over
// io.Pipe and one SendRequest. A channel the first bubble's connection made
// must never be used by the second's (Go aborts the process with "select on
// synctest channel from outside bubble").
func TestWhySynctestBubblesInARow(t *testing.T) {
	for i := range 2 {
		synctest.Test(t, func(t *testing.T) {
			a, _ := pipePair(t, nil, echoHandler)
			got, err := SendRequest[json.RawMessage](a, context.Background(), "echo", map[string]int{"n": i})
			if err != nil {
				t.Fatalf("bubble %d: SendRequest: %v", i, err)
			}
			if want := `{"n":` + string(rune('0'+i)) + `}`; string(got) != want {
				t.Fatalf("bubble %d: result %s, want %s", i, got, want)
			}
		})
	}
}

// countingClient is a Client that counts session updates and the bytes of
// their message chunks, and sleeps (in the bubble's fake time) in each so
// the agent's burst runs into flow control.
type countingClient struct {
	testClient
	mu      sync.Mutex
	updates int
	bytes   int
}

func (c *countingClient) SessionUpdate(_ context.Context, n SessionNotification) error {
	time.Sleep(time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates++
	if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
		c.bytes += len(m.Content.Text.Text)
	}
	return nil
}

// streamingAgent is a testAgent whose Prompt streams updates (a burst of
// small ones and one large frame) and calls back into the client before it
// waits for session/cancel.
type streamingAgent struct {
	testAgent
	conn  *AgentSideConnection
	burst int
	large int
}

func (a *streamingAgent) Prompt(ctx context.Context, p PromptRequest) (PromptResponse, error) {
	for i := range a.burst {
		if err := a.conn.SessionUpdate(ctx, SessionNotification{SessionId: p.SessionId, Update: UpdateAgentMessageText(strconv.Itoa(i))}); err != nil {
			return PromptResponse{}, err
		}
	}
	big := strings.Repeat("x", a.large)
	if err := a.conn.SessionUpdate(ctx, SessionNotification{SessionId: p.SessionId, Update: UpdateAgentMessageText(big)}); err != nil {
		return PromptResponse{}, err
	}
	if _, err := a.conn.ReadTextFile(ctx, ReadTextFileRequest{SessionId: p.SessionId, Path: "/a"}); err != nil {
		return PromptResponse{}, err
	}
	return a.testAgent.Prompt(ctx, p)
}

// typedPair connects a ClientSideConnection and an AgentSideConnection over
// io.Pipe.
func typedPair(client Client, agent *streamingAgent, opts ...ConnectionOption) (*ClientSideConnection, *AgentSideConnection) {
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	cc := NewClientSideConnection(client, clientOut, clientIn, opts...)
	agent.conn = NewAgentSideConnection(agent, agentOut, agentIn, opts...)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cc.SetLogger(quiet)
	agent.conn.SetLogger(quiet)
	return cc, agent.conn
}

// TestSynctestEveryEntryPoint runs the public entry points of both sides
// inside testing/synctest bubbles, several in a row: requests both ways,
// notifications under flow control, a large frame, Cancel, a call whose ctx
// ends ($/cancel_request), Close and Wait. synctest.Test fails when a
// goroutine of a bubble is left behind, so every goroutine a connection
// starts must be gone after Close and Wait.
func TestSynctestEveryEntryPoint(t *testing.T) {
	const burst, large = 200, 1 << 20
	for bubble := range 3 {
		synctest.Test(t, func(t *testing.T) {
			client := &countingClient{testClient: *newTestClient()}
			agent := &streamingAgent{testAgent: *newTestAgent(), burst: burst, large: large}
			cc, ac := typedPair(client, agent, WithMaxQueuedNotifications(8))
			ctx := context.Background()

			if _, err := cc.Initialize(ctx, InitializeRequest{ProtocolVersion: ProtocolVersionNumber}); err != nil {
				t.Fatalf("bubble %d: Initialize: %v", bubble, err)
			}
			sess, err := cc.NewSession(ctx, NewSessionRequest{Cwd: "/", McpServers: []McpServer{}})
			if err != nil {
				t.Fatalf("bubble %d: NewSession: %v", bubble, err)
			}
			prompted := make(chan error, 1)
			go func() {
				resp, err := cc.Prompt(ctx, PromptRequest{SessionId: sess.SessionId, Prompt: []ContentBlock{TextBlock("hi")}})
				if err == nil && resp.StopReason != StopReasonCancelled {
					err = errors.New("stop reason " + string(resp.StopReason))
				}
				prompted <- err
			}()
			<-agent.prompting
			if err := cc.Cancel(ctx, CancelNotification{SessionId: sess.SessionId}); err != nil {
				t.Fatalf("bubble %d: Cancel: %v", bubble, err)
			}
			if err := <-prompted; err != nil {
				t.Fatalf("bubble %d: Prompt: %v", bubble, err)
			}
			if id := <-agent.cancelled; id != sess.SessionId {
				t.Fatalf("bubble %d: cancelled %q", bubble, id)
			}
			client.mu.Lock()
			updates, bytes := client.updates, client.bytes
			client.mu.Unlock()
			if updates != burst+1 || bytes < large {
				t.Fatalf("bubble %d: %d updates (%d bytes) before the prompt result, want %d (≥ %d bytes)", bubble, updates, bytes, burst+1, large)
			}

			// A call abandoned by its ctx sends $/cancel_request, which
			// ends the peer handler's ctx.
			raw, peer := pipePair(t, nil, func(ctx context.Context, _ string, _ json.RawMessage) (any, *RequestError) {
				<-ctx.Done()
				return nil, nil
			})
			callCtx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if _, err := SendRequest[json.RawMessage](raw, callCtx, "wait", nil); err == nil {
				t.Fatalf("bubble %d: abandoned call succeeded", bubble)
			}
			if err := raw.SendNotification(ctx, "note", map[string]int{"n": 1}); err != nil {
				t.Fatalf("bubble %d: SendNotification: %v", bubble, err)
			}
			_ = raw.Close()
			_ = peer.Close()

			if err := cc.Close(); err != nil {
				t.Fatalf("bubble %d: Close: %v", bubble, err)
			}
			_ = ac.Close()
			for _, w := range []func(context.Context) error{cc.Wait, ac.Wait, raw.Wait, peer.Wait} {
				if err := w(ctx); err != nil {
					t.Fatalf("bubble %d: Wait: %v", bubble, err)
				}
			}
		})
	}
}
