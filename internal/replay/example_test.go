package replay_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/internal/replay"
)

// Serve a recorded turn to a live client: the recorded answers go out under
// the live request's ids, and a request the capture does not hold gets its
// fallback.
func ExampleAgent_Serve() {
	c, err := capture.Read(strings.NewReader(`{"from":"client","msg":{"jsonrpc":"2.0","id":0,"method":"session/new","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"result":{"sessionId":"s1"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	toAgent, clientW := io.Pipe()
	clientR, fromAgent := io.Pipe()
	go func() {
		_ = replay.NewAgent(c).Serve(context.Background(), toAgent, fromAgent)
		fromAgent.Close()
	}()
	lines := bufio.NewScanner(clientR)
	ask := func(request string, answers int) {
		go io.WriteString(clientW, request+"\n")
		for range answers {
			lines.Scan()
			fmt.Println(lines.Text())
		}
	}
	ask(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{}}`, 1)
	ask(`{"jsonrpc":"2.0","id":"b","method":"session/new","params":{}}`, 1)
	ask(`{"jsonrpc":"2.0","id":"c","method":"session/prompt","params":{}}`, 2)
	clientW.Close()
	// Output:
	// {"jsonrpc":"2.0","id":"a","result":{"agentCapabilities":{},"authMethods":[],"protocolVersion":1}}
	// {"jsonrpc":"2.0","id":"b","result":{"sessionId":"s1"}}
	// {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}
	// {"jsonrpc":"2.0","id":"c","result":{"stopReason":"end_turn"}}
}
