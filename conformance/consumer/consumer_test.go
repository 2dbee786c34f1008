package acpconsumer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// hangGuard bounds every read from the pipes; it never decides a result.
const hangGuard = 30 * time.Second

// agentEnd is the test's side of the pipes: it writes raw frames as an
// agent would and reads what the client connection writes back.
type agentEnd struct {
	t     *testing.T
	w     *io.PipeWriter
	lines chan string
}

func newPair(t *testing.T, client acp.Client) (*acp.ClientSideConnection, *agentEnd) {
	t.Helper()
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	conn := acp.NewClientSideConnection(client, clientOut, clientIn, acp.WithMaxQueuedNotifications(64))
	a := &agentEnd{t: t, w: agentOut, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(agentIn)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	t.Cleanup(func() {
		_ = agentOut.Close()
		<-conn.Done()
		_ = clientOut.Close()
	})
	return conn, a
}

func (a *agentEnd) send(frame string) {
	a.t.Helper()
	if _, err := io.WriteString(a.w, frame+"\n"); err != nil {
		a.t.Fatalf("write %s: %v", frame, err)
	}
}

func (a *agentEnd) next() string {
	a.t.Helper()
	select {
	case l, ok := <-a.lines:
		if !ok {
			a.t.Fatal("client connection closed its output")
		}
		return l
	case <-time.After(hangGuard):
		a.t.Fatal("no frame from the client (hang guard)")
	}
	return ""
}

func TestCursorTaskRoundTrip(t *testing.T) {
	client := &Client{}
	_, agent := newPair(t, client)

	params := `{"toolCallId":"toolu_1","description":"Explore the repo","prompt":"List packages","subagentType":"explore","model":"composer-2.5"}`
	agent.send(`{"jsonrpc":"2.0","id":7,"method":"cursor/task","params":` + params + `}`)
	if got, want := agent.next(), `{"jsonrpc":"2.0","id":7,"result":{}}`; got != want {
		t.Fatalf("cursor/task reply\n got %s\nwant %s", got, want)
	}
	tasks := client.Tasks()
	if len(tasks) != 1 || string(tasks[0].Params) != params {
		t.Fatalf("handler saw %+v, want the raw params %s", tasks, params)
	}

	agent.send(`{"jsonrpc":"2.0","id":8,"method":"foo/bar","params":{}}`)
	var reply struct {
		ID    int               `json:"id"`
		Error *acp.RequestError `json:"error"`
	}
	if err := json.Unmarshal([]byte(agent.next()), &reply); err != nil {
		t.Fatal(err)
	}
	if reply.ID != 8 || reply.Error == nil || reply.Error.Code != -32601 {
		t.Fatalf("foo/bar reply = %+v, want id 8 with -32601", reply)
	}
}

func TestExtensionNotificationReachesHandler(t *testing.T) {
	client := &Client{}
	_, agent := newPair(t, client)
	agent.send(`{"jsonrpc":"2.0","method":"_kandev/ping","params":{"n":1}}`)
	// A request behind the notification: notifications are handled in
	// order, and the reply proves the connection is alive; then wait for
	// the notification to land.
	agent.send(`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/x"}}`)
	if got, want := agent.next(), `{"jsonrpc":"2.0","id":1,"result":{"content":""}}`; got != want {
		t.Fatalf("read reply\n got %s\nwant %s", got, want)
	}
	deadline := time.Now().Add(hangGuard)
	for len(client.Notices()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := client.Notices(); len(got) != 1 || got[0] != "_kandev/ping" {
		t.Fatalf("notices = %v, want [_kandev/ping]", got)
	}
}

func TestPeerDisconnectedIsMatchable(t *testing.T) {
	conn, agent := newPair(t, &Client{})
	errc := make(chan error, 1)
	go func() {
		_, err := conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: "/w", McpServers: []acp.McpServer{}})
		errc <- err
	}()
	agent.next() // the session/new request
	_ = agent.w.Close()
	var err error
	select {
	case err = <-errc:
	case <-time.After(hangGuard):
		t.Fatal("NewSession did not return after the agent left (hang guard)")
	}
	var re *acp.RequestError
	if !errors.Is(err, acp.ErrPeerDisconnected) || !errors.As(err, &re) || re.Code != -32603 {
		t.Fatalf("err = %v, want a -32603 *RequestError matching ErrPeerDisconnected", err)
	}
}
