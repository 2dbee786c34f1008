// Command wirecheck replays fixed wire scenarios against whichever
// github.com/coder/acp-go-sdk it is built with and prints the bytes the SDK
// writes, so two builds (patched upstream and this repository's sdk/) can be
// compared byte for byte. compare.sh builds it twice with -modfile.
//
// Usage: wirecheck cursor-task | unknown-vendor-methods
//
// The program plays the agent with raw JSON-RPC lines against a
// ClientSideConnection (and, for one step, plays the client against an
// AgentSideConnection). Each step prints what was sent ("> "), every line
// the SDK wrote back ("< ") and what the extension handler observed ("h ").
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// hangGuard bounds every wait; the scenarios finish in milliseconds.
const hangGuard = 10 * time.Second

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wirecheck cursor-task | unknown-vendor-methods")
		os.Exit(2)
	}
	// Connection diagnostics differ between SDKs and are not wire bytes.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))

	out := bufio.NewWriter(os.Stdout)
	var err error
	switch os.Args[1] {
	case "cursor-task":
		err = cursorTask(out)
	case "unknown-vendor-methods":
		err = unknownVendorMethods(out)
	default:
		err = fmt.Errorf("unknown scenario %q", os.Args[1])
	}
	if flushErr := out.Flush(); err == nil {
		err = flushErr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirecheck:", err)
		os.Exit(1)
	}
}

// plainClient satisfies acp.Client through a nil embedded interface; the
// scenarios never call its methods. It has no extension handler.
type plainClient struct{ acp.Client }

// vendorClient answers like a client that intercepts cursor/task: an empty
// object for cursor/task and a few "_vendor" methods, -32601 otherwise.
type vendorClient struct {
	acp.Client
	seen chan string
}

func (c vendorClient) HandleExtensionMethod(_ context.Context, method string, params json.RawMessage) (any, error) {
	c.seen <- method + " " + string(params)
	switch method {
	case "cursor/task":
		return struct{}{}, nil
	case "_vendor/echo":
		return params, nil
	case "_vendor/wrapped":
		return nil, fmt.Errorf("validating: %w", acp.NewInvalidParams(map[string]any{"why": "bad"}))
	case "_vendor/plain-error":
		return nil, errors.New("boom")
	}
	return nil, acp.NewMethodNotFound(method)
}

// plainAgent satisfies acp.Agent through a nil embedded interface.
type plainAgent struct{ acp.Agent }

func (plainAgent) HandleExtensionMethod(_ context.Context, method string, _ json.RawMessage) (any, error) {
	return struct{}{}, nil
}

// peer is the scripted side of one connection.
type peer struct {
	out   *bufio.Writer
	send  io.Writer
	lines chan string
	seen  chan string
}

func newPeer(out *bufio.Writer, seen chan string, start func(w io.Writer, r io.Reader)) *peer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{out: out, send: inW, lines: make(chan string, 16), seen: seen}
	start(outW, inR)
	go func() {
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	return p
}

func (p *peer) write(line string) error {
	fmt.Fprintf(p.out, "> %s\n", line)
	_, err := io.WriteString(p.send, line+"\n")
	return err
}

// request sends a request line and prints the reply the SDK writes,
// exactly, including its newline.
func (p *peer) request(line string) error {
	if err := p.write(line); err != nil {
		return err
	}
	select {
	case reply, ok := <-p.lines:
		if !ok {
			return errors.New("connection closed before replying to " + line)
		}
		fmt.Fprintf(p.out, "< %q\n", reply)
	case <-time.After(hangGuard):
		return errors.New("no reply to " + line)
	}
	return p.drainSeen()
}

// notify sends a notification and waits until the handler has seen it.
func (p *peer) notify(line string) error {
	if err := p.write(line); err != nil {
		return err
	}
	if p.seen == nil {
		return nil
	}
	select {
	case s := <-p.seen:
		fmt.Fprintf(p.out, "h %s\n", s)
	case <-time.After(hangGuard):
		return errors.New("handler never saw " + line)
	}
	return nil
}

func (p *peer) drainSeen() error {
	if p.seen == nil {
		return nil
	}
	for {
		select {
		case s := <-p.seen:
			fmt.Fprintf(p.out, "h %s\n", s)
		default:
			return nil
		}
	}
}

func clientPeer(out *bufio.Writer, withHandler bool) *peer {
	if !withHandler {
		return newPeer(out, nil, func(w io.Writer, r io.Reader) { acp.NewClientSideConnection(plainClient{}, w, r) })
	}
	seen := make(chan string, 16)
	return newPeer(out, seen, func(w io.Writer, r io.Reader) {
		acp.NewClientSideConnection(vendorClient{seen: seen}, w, r)
	})
}

func section(out *bufio.Writer, title string) {
	fmt.Fprintf(out, "\n## %s\n", title)
}

func cursorTask(out *bufio.Writer) error {
	section(out, "client with ExtensionMethodHandler")
	p := clientPeer(out, true)
	steps := []string{
		`{"jsonrpc":"2.0","id":7,"method":"cursor/task","params":{"toolCallId":"tool_1","description":"Explore the repo","prompt":"List the packages","subagentType":"explore","model":"fast","agentId":"agent-42"}}`,
		`{"jsonrpc":"2.0","id":"ct-2","method":"cursor/task","params":{"toolCallId":"tool_2","description":"Run tests <&>","prompt":"go test ./...","isBackground":true}}`,
		`{"jsonrpc":"2.0","id":1.0e1,"method":"cursor/task","params":{}}`,
	}
	for _, s := range steps {
		if err := p.request(s); err != nil {
			return err
		}
	}

	section(out, "client without ExtensionMethodHandler")
	q := clientPeer(out, false)
	return q.request(`{"jsonrpc":"2.0","id":8,"method":"cursor/task","params":{"toolCallId":"tool_3"}}`)
}

func unknownVendorMethods(out *bufio.Writer) error {
	section(out, "client with ExtensionMethodHandler")
	p := clientPeer(out, true)
	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"foo/bar","params":{"x":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"_vendor/echo","params":{"msg":"hi","n":9007199254740993}}`,
		`{"jsonrpc":"2.0","id":3,"method":"_vendor/wrapped","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"_vendor/plain-error","params":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"_vendor/missing"}`,
		`{"jsonrpc":"2.0","id":6,"method":"vendor.example/thing","params":[1,2]}`,
	}
	for _, s := range requests {
		if err := p.request(s); err != nil {
			return err
		}
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"_vendor/note","params":{"a":1}}`,
		`{"jsonrpc":"2.0","method":"vendor/note","params":{"b":2}}`,
	} {
		if err := p.notify(s); err != nil {
			return err
		}
	}
	// Notifications get no reply: the next line must answer this request.
	if err := p.request(`{"jsonrpc":"2.0","id":"after-notes","method":"_vendor/echo","params":null}`); err != nil {
		return err
	}

	section(out, "client without ExtensionMethodHandler")
	q := clientPeer(out, false)
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"_vendor/x","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"foo/bar","params":{}}`,
	} {
		if err := q.request(s); err != nil {
			return err
		}
	}
	if err := q.write(`{"jsonrpc":"2.0","method":"foo/note","params":{}}`); err != nil {
		return err
	}
	if err := q.request(`{"jsonrpc":"2.0","id":3,"method":"_vendor/y"}`); err != nil {
		return err
	}

	section(out, "agent side keeps -32601 for unknown non-_ methods")
	a := newPeer(out, nil, func(w io.Writer, r io.Reader) { acp.NewAgentSideConnection(plainAgent{}, w, r) })
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"cursor/task","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"_vendor/ok","params":{}}`,
	} {
		if err := a.request(s); err != nil {
			return err
		}
	}
	return nil
}
