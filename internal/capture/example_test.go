package capture_test

import (
	"fmt"
	"strings"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Read a capture and route its messages with the shared envelope reader.
func ExampleRead() {
	const text = `{"capture":{"version":1,"agent":"cursor"}}
{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}},"t":0}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Task"}}},"t":12}
{"from":"agent","msg":{"jsonrpc":"2.0","id":1.0,"result":{"stopReason":"end_turn"}},"t":40}
`
	c, err := capture.Read(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("agent:", c.Agent())
	for _, e := range c.Entries {
		m, _ := capture.ParseMessage(e.Msg)
		switch {
		case m.IsRequest():
			fmt.Printf("line %d: %s request %s (id key %s)\n", e.Line, e.From, m.Method, capture.IDKey(m.ID))
		case m.IsNotification():
			fmt.Printf("line %d: %s notification %s\n", e.Line, e.From, m.Method)
		case m.IsResponse():
			fmt.Printf("line %d: %s response (id key %s)\n", e.Line, e.From, capture.IDKey(m.ID))
		}
	}
	// A broken line is reported with its number and reason.
	_, err = capture.Read(strings.NewReader(`{"from":"agent","msg":[1]}`))
	fmt.Println(err)
	// Output:
	// agent: cursor
	// line 2: client request session/prompt (id key 1)
	// line 3: agent notification session/update
	// line 4: agent response (id key 1)
	// capture line 1: "msg" must be a JSON-RPC message object
}
