package replay

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

const script = `{"capture":{"version":1,"agent":"cursor"}}
{"from":"client","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"cursor"}}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Task"}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":9,"method":"cursor/task","params":{"toolCallId":"t1"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":9,"result":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}}
`

// liveClient drives a scripted agent over pipes, line by line.
type liveClient struct {
	t  *testing.T
	w  io.WriteCloser
	br *bufio.Reader
}

func start(t *testing.T, c *capture.Capture) *liveClient {
	t.Helper()
	toAgent, clientW := io.Pipe()
	clientR, fromAgent := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan error, 1)
	go func() { done <- NewAgent(c).Serve(ctx, toAgent, fromAgent); fromAgent.Close() }()
	t.Cleanup(func() {
		clientW.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		cancel()
	})
	return &liveClient{t: t, w: clientW, br: bufio.NewReader(clientR)}
}

func (c *liveClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *liveClient) expect(want string) {
	c.t.Helper()
	line, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read: %v (want %s)", err, want)
	}
	if got := strings.TrimSpace(line); got != want {
		c.t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestReplayFollowsScriptAndRemapsIDs(t *testing.T) {
	c, err := capture.Read(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	lc := start(t, c)
	lc.send(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":1,"agentInfo":{"name":"cursor"}}}`)
	lc.send(`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":5,"result":{"sessionId":"s1"}}`)
	lc.send(`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Task"}}}`)
	lc.expect(`{"jsonrpc":"2.0","id":9,"method":"cursor/task","params":{"toolCallId":"t1"}}`)
	// A client request while the agent waits gets a fallback answer.
	lc.send(`{"jsonrpc":"2.0","id":7,"method":"session/set_mode","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":7,"result":{}}`)
	lc.send(`{"jsonrpc":"2.0","id":9,"result":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":6,"result":{"stopReason":"end_turn"}}`)
}

func TestReplayWithoutClientEntriesPlaysOneTurn(t *testing.T) {
	c, err := capture.Read(strings.NewReader(`{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"abc","update":{"sessionUpdate":"plan","entries":[]}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"stray"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	lc := start(t, c)
	lc.send(`garbage`)
	lc.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	lc.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":1,"result":{"agentCapabilities":{},"authMethods":[],"protocolVersion":1}}`)
	lc.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"abc"}}`)
	lc.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"abc","update":{"sessionUpdate":"plan","entries":[]}}}`)
	lc.expect(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
}

func TestReplayAnswersWhenCaptureEndsEarly(t *testing.T) {
	c, err := capture.Read(strings.NewReader(`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	lc := start(t, c)
	lc.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}`)
	lc.expect(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
}

// The agent asks a permission right after session/new; the live client
// sends session/prompt before it answers the permission. The prompt is
// held until the permission's answer and then follows the recorded turn
// (its recorded stop reason), instead of getting a fallback end_turn.
func TestReplayHoldsARecordedRequestWhileWaiting(t *testing.T) {
	c, err := capture.Read(strings.NewReader(`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan","entries":[]}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":2,"result":{"stopReason":"max_tokens"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	lc := start(t, c)
	lc.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`)
	lc.expect(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1"}}`)
	lc.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}`)
	lc.send(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`)
	lc.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan","entries":[]}}}`)
	lc.expect(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"max_tokens"}}`)
}

// A request the agent recorded after its last answer (a background child's
// permission, AIR backgroundSubagents) that the live client closes its
// side on, unanswered: the notifications recorded after it still go out,
// as a real agent's output goes on.
func TestReplayPlaysTheTailWhenTheClientClosesOnARequest(t *testing.T) {
	c, err := capture.Read(strings.NewReader(`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"c1"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"subagent_state_update","subagentSessionId":"c1","state":"completed"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	lc := start(t, c)
	lc.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`)
	lc.expect(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
	lc.expect(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"c1"}}`)
	lc.w.Close()
	lc.expect(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"subagent_state_update","subagentSessionId":"c1","state":"completed"}}}`)
}
