package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// cursorClient is a Client that also answers methods outside ACP.
type cursorClient struct{ *testClient }

// HandleExtensionMethod receives every inbound request that is not a client
// method, such as Cursor's "cursor/task".
func (c cursorClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == "cursor/task" {
		fmt.Printf("cursor/task params: %s\n", params)
		return struct{}{}, nil // sent as "result":{}
	}
	return nil, NewMethodNotFound(method)
}

// A client that implements ExtensionMethodHandler answers Cursor's
// cursor/task request instead of -32601.
func ExampleExtensionMethodHandler() {
	clientReads, agentWrites := io.Pipe()
	agentReads, clientWrites := io.Pipe()
	conn := NewClientSideConnection(cursorClient{newTestClient()}, clientWrites, clientReads)

	// The agent's side of the pipes, spoken by hand.
	go func() {
		_, _ = io.WriteString(agentWrites, `{"jsonrpc":"2.0","id":7,"method":"cursor/task","params":{"toolCallId":"t1"}}`+"\n")
	}()
	reply := make([]byte, 64)
	n, _ := agentReads.Read(reply)
	fmt.Printf("reply: %s", reply[:n])
	agentWrites.Close()
	<-conn.Done()
	// Output:
	// cursor/task params: {"toolCallId":"t1"}
	// reply: {"jsonrpc":"2.0","id":7,"result":{}}
}

// Patch fields tell an omitted property, an explicit null and a value apart.
func ExampleNullable() {
	var u SubagentUpdate
	_ = json.Unmarshal([]byte(`{"sessionId":"child","title":null,"cwd":"/work"}`), &u)
	if u.Title.Null() {
		fmt.Println("title: cleared")
	}
	if cwd, ok := u.Cwd.Value(); ok {
		fmt.Println("cwd:", cwd)
	}
	if !u.Description.Set() {
		fmt.Println("description: unchanged")
	}
	// Output:
	// title: cleared
	// cwd: /work
	// description: unchanged
}

// A session-update kind this SDK does not know is kept as received.
func ExampleSessionUpdate_Unknown() {
	var n SessionNotification
	_ = json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"future_kind","x":1}}`), &n)
	kind, raw, ok := n.Update.Unknown()
	fmt.Println(kind, string(raw), ok)
	out, _ := json.Marshal(n)
	fmt.Println(string(out))
	// Output:
	// future_kind {"sessionUpdate":"future_kind","x":1} true
	// {"sessionId":"s","update":{"sessionUpdate":"future_kind","x":1}}
}
