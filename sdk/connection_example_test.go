package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	acp "github.com/coder/acp-go-sdk"
)

// Two raw JSON-RPC connections over in-memory pipes: one answers "greet"
// requests, the other calls it and sends a notification.
func ExampleNewConnection() {
	serverReads, clientWrites := io.Pipe()
	clientReads, serverWrites := io.Pipe()

	notified := make(chan string, 1)
	server := acp.NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *acp.RequestError) {
		switch method {
		case "greet":
			var name string
			if err := json.Unmarshal(params, &name); err != nil {
				return nil, acp.NewInvalidParams(map[string]any{"error": err.Error()})
			}
			return "hello " + name, nil
		case "note":
			notified <- string(params)
			return nil, nil
		}
		return nil, acp.NewMethodNotFound(method)
	}, serverWrites, serverReads)
	client := acp.NewConnection(nil, clientWrites, clientReads)

	greeting, err := acp.SendRequest[string](client, context.Background(), "greet", "ada")
	fmt.Println(greeting, err)

	_, err = acp.SendRequest[string](client, context.Background(), "unknown", nil)
	fmt.Println(err)

	_ = client.SendNotification(context.Background(), "note", map[string]int{"n": 1})
	fmt.Println(<-notified)

	_ = client.Close()
	_ = server.Wait(context.Background())
	fmt.Println(server.Err())
	// Output:
	// hello ada <nil>
	// {"code":-32601,"message":"Method not found","data":{"method":"unknown"}}
	// {"n":1}
	// peer connection closed
}

// Close ends a connection from the local side; Wait reports when every
// goroutine it started has returned.
func ExampleConnection_Close() {
	peerReads, w := io.Pipe()
	r, peerWrites := io.Pipe()
	defer peerReads.Close()
	defer peerWrites.Close()

	conn := acp.NewConnection(nil, w, r)
	_ = conn.Close()
	<-conn.Done()
	fmt.Println(conn.Err())
	fmt.Println(conn.Wait(context.Background()))
	// Output:
	// connection closed
	// <nil>
}

// A queued request: the second request is sent once the first is on the
// wire, without waiting for the first's answer, so the peer reads them in
// that order (a peer that queues them answers in that order too).
func ExampleWithRequestTrace() {
	serverReads, clientWrites := io.Pipe()
	clientReads, serverWrites := io.Pipe()
	var order []string
	server := acp.NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *acp.RequestError) {
		var text string
		_ = json.Unmarshal(params, &text)
		return "done: " + text, nil
	}, serverWrites, serverReads)
	client := acp.NewConnection(nil, clientWrites, clientReads)

	wrote := make(chan struct{})
	first := make(chan string, 1)
	ctx := acp.WithRequestTrace(context.Background(), &acp.RequestTrace{WroteRequest: func(err error) { close(wrote) }})
	go func() {
		answer, _ := acp.SendRequest[string](client, ctx, "prompt", "first")
		first <- answer
	}()
	<-wrote // the first request is on the wire; its answer may still be on its way
	second, _ := acp.SendRequest[string](client, context.Background(), "prompt", "second")
	order = append(order, <-first, second)
	fmt.Println(order)

	_ = client.Close()
	_ = server.Wait(context.Background())
	// Output:
	// [done: first done: second]
}
