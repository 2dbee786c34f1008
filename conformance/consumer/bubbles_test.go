package acpconsumer

// The patterns of a consumer's own test suite (as Kandev's backend tests
// its ACP transport): every test in a testing/synctest bubble, several
// bubbles in one process, many connections per bubble, handlers that call
// back into the connection, and a running turn cancelled by session/load.
// Written against upstream's API only, with our SDK swapped in by go.mod.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// turnAgent is a scripted agent: Prompt streams updates, asks for a
// permission, then waits for session/cancel (or for session/load of the
// same session, which cancels the running turn); LoadSession replays a
// history of updates before it answers.
type turnAgent struct {
	conn    *acp.AgentSideConnection
	updates int // streamed by each Prompt
	history int // replayed by LoadSession

	mu      sync.Mutex
	running map[acp.SessionId]context.CancelFunc
	started chan acp.SessionId
}

func newTurnAgent(updates, history int) *turnAgent {
	return &turnAgent{updates: updates, history: history, running: map[acp.SessionId]context.CancelFunc{}, started: make(chan acp.SessionId, 16)}
}

func (a *turnAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}
func (a *turnAgent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AgentCapabilities: acp.AgentCapabilities{LoadSession: true}}, nil
}
func (a *turnAgent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}
func (a *turnAgent) Cancel(_ context.Context, n acp.CancelNotification) error {
	a.cancelTurn(n.SessionId)
	return nil
}
func (a *turnAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}
func (a *turnAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil
}
func (a *turnAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: "sess-1"}, nil
}
func (a *turnAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}
func (a *turnAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}
func (a *turnAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

func (a *turnAgent) cancelTurn(id acp.SessionId) {
	a.mu.Lock()
	cancel := a.running[id]
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (a *turnAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	a.running[p.SessionId] = cancel
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.running, p.SessionId)
		a.mu.Unlock()
	}()
	for i := range a.updates {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText(fmt.Sprintf("chunk %d", i))}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	if _, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: p.SessionId, ToolCall: acp.ToolCallUpdate{ToolCallId: "tc-1"}, Options: []acp.PermissionOption{}}); err != nil {
		return acp.PromptResponse{}, err
	}
	a.started <- p.SessionId
	<-ctx.Done()
	return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
}

func (a *turnAgent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	a.cancelTurn(p.SessionId) // a reload ends the running turn
	for i := range a.history {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateUserMessageText(fmt.Sprintf("history %d", i))}); err != nil {
			return acp.LoadSessionResponse{}, err
		}
	}
	return acp.LoadSessionResponse{}, nil
}

// recordingClient is Client plus a count of session updates; when
// callBack is set, its SessionUpdate calls back into the agent (set a
// mode) with a timeout of its own, derived from the handler's ctx as the
// SDK's rule for calls from handlers asks (a timeout on
// context.Background() would make the call wait for the handler itself).
type recordingClient struct {
	Client
	conn     *acp.ClientSideConnection
	callBack bool

	mu      sync.Mutex
	updates int
}

func (c *recordingClient) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates++
	first := c.updates == 1
	c.mu.Unlock()
	if c.callBack && first {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := c.conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: n.SessionId, ModeId: "code"}); err != nil {
			return err
		}
	}
	return nil
}

func (c *recordingClient) seen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updates
}

// connect wires a client and an agent over io.Pipe, as a consumer's test
// does, with a bounded notification queue so bursts meet flow control.
func connect(client *recordingClient, agent *turnAgent) (*acp.ClientSideConnection, *acp.AgentSideConnection) {
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	cc := acp.NewClientSideConnection(client, clientOut, clientIn, acp.WithMaxQueuedNotifications(4))
	ac := acp.NewAgentSideConnection(agent, agentOut, agentIn)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cc.SetLogger(quiet)
	ac.SetLogger(quiet)
	client.conn, agent.conn = cc, ac
	return cc, ac
}

// hangUp closes both ends and waits for every goroutine of both
// connections; synctest then reports any goroutine left in the bubble.
func hangUp(t *testing.T, cc *acp.ClientSideConnection, ac *acp.AgentSideConnection) {
	t.Helper()
	_ = cc.Close()
	_ = ac.Close()
	if err := cc.Wait(context.Background()); err != nil {
		t.Errorf("client Wait: %v", err)
	}
	if err := ac.Wait(context.Background()); err != nil {
		t.Errorf("agent Wait: %v", err)
	}
}

// startTurn opens a session and starts a prompt turn in the background; it
// returns once the agent streamed its updates and got its permission.
func startTurn(t *testing.T, cc *acp.ClientSideConnection, agent *turnAgent) (acp.SessionId, <-chan error) {
	t.Helper()
	ctx := context.Background()
	if _, err := cc.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	sess, err := cc.NewSession(ctx, acp.NewSessionRequest{Cwd: "/w", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := cc.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("go")}})
		if err == nil && resp.StopReason != acp.StopReasonCancelled {
			err = fmt.Errorf("stop reason %q, want cancelled", resp.StopReason)
		}
		done <- err
	}()
	<-agent.started
	return sess.SessionId, done
}

// TestAsyncTurnCancelledByLoadSession is the consumer's pattern that
// aborted with "select on synctest channel from outside bubble" when run
// after another bubble: a turn runs in the background, session/load of the
// same session cancels it, and the replayed history is handled before
// LoadSession returns. Run in several bubbles in a row.
func TestAsyncTurnCancelledByLoadSession(t *testing.T) {
	const updates, history = 50, 200
	for bubble := range 3 {
		synctest.Test(t, func(t *testing.T) {
			client, agent := &recordingClient{}, newTurnAgent(updates, history)
			cc, ac := connect(client, agent)
			sess, turn := startTurn(t, cc, agent)
			if _, err := cc.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: sess, Cwd: "/w", McpServers: []acp.McpServer{}}); err != nil {
				t.Fatalf("bubble %d: LoadSession: %v", bubble, err)
			}
			if n := client.seen(); n != updates+history {
				t.Fatalf("bubble %d: %d updates handled when LoadSession returned, want %d", bubble, n, updates+history)
			}
			if err := <-turn; err != nil {
				t.Fatalf("bubble %d: Prompt: %v", bubble, err)
			}
			hangUp(t, cc, ac)
		})
	}
}

// TestManyConnectionsPerBubble runs eight client/agent pairs at once in
// each of several bubbles: turns cancelled with session/cancel, one pair's
// handler calling back into its agent with an unrelated context.
func TestManyConnectionsPerBubble(t *testing.T) {
	const pairs, updates = 8, 100
	for bubble := range 3 {
		synctest.Test(t, func(t *testing.T) {
			var wg sync.WaitGroup
			for i := range pairs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					client, agent := &recordingClient{callBack: i == 0}, newTurnAgent(updates, 0)
					cc, ac := connect(client, agent)
					defer hangUp(t, cc, ac)
					sess, turn := startTurn(t, cc, agent)
					if err := cc.Cancel(context.Background(), acp.CancelNotification{SessionId: sess}); err != nil {
						t.Errorf("bubble %d pair %d: Cancel: %v", bubble, i, err)
						return
					}
					if err := <-turn; err != nil {
						t.Errorf("bubble %d pair %d: Prompt: %v", bubble, i, err)
					}
					if n := client.seen(); n != updates {
						t.Errorf("bubble %d pair %d: %d updates before the prompt result, want %d", bubble, i, n, updates)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestHandlerCallBackWithOwnContext: a SessionUpdate handler that calls the
// agent with a timeout of its own (derived from the handler's ctx), during a
// burst beyond the queue bound, gets its answer without waiting for that
// timeout (in the bubble a wait would show as fake time passing).
func TestHandlerCallBackWithOwnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, agent := &recordingClient{callBack: true}, newTurnAgent(200, 0)
		cc, ac := connect(client, agent)
		start := time.Now()
		sess, turn := startTurn(t, cc, agent)
		if waited := time.Since(start); waited > 0 {
			t.Fatalf("the turn started after %v of (fake) waiting: the call-back waited for its context", waited)
		}
		if err := cc.Cancel(context.Background(), acp.CancelNotification{SessionId: sess}); err != nil {
			t.Fatal(err)
		}
		if err := <-turn; err != nil {
			t.Fatal(err)
		}
		hangUp(t, cc, ac)
	})
}
