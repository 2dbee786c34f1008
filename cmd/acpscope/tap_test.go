package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/tap"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/proctest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// wire records the bytes at both ends of a tapped connection: what the
// client sent and received, what the agent process received and sent.
type wire struct {
	clientSent, clientGot, agentGot, agentSent lockedBuffer
}

// check fails unless each side received exactly what the other sent.
func (w *wire) check(t *testing.T) {
	t.Helper()
	if !bytes.Equal(w.clientSent.Bytes(), w.agentGot.Bytes()) {
		t.Errorf("the agent received other bytes than the client sent:\nsent %q\n got %q", w.clientSent.Bytes(), w.agentGot.Bytes())
	}
	if !bytes.Equal(w.agentSent.Bytes(), w.clientGot.Bytes()) {
		t.Errorf("the client received other bytes than the agent sent:\nsent %q\n got %q", w.agentSent.Bytes(), w.clientGot.Bytes())
	}
	if len(w.clientGot.Bytes()) == 0 {
		t.Error("nothing crossed the tap")
	}
}

// storedCards is every stored row of the sessions, as comparable text
// (times and the execution id, which differ between two processes, left
// out).
func storedCards(t *testing.T, dsn string, sessions ...string) string {
	t.Helper()
	s, err := persistence.OpenReadOnly(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b strings.Builder
	for _, id := range sessions {
		rows, err := s.ListBySession(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			fmt.Fprintf(&b, "%s %s parent=%s type=%s desc=%s tool=%s agent=%s model=%s tokens=%s tools=%s ms=%s async=%v child=%s\n",
				r.TaskSessionID, r.ToolCallID, deref(r.ParentToolCallID), deref(r.SubagentType), deref(r.Description),
				deref(r.ToolStatus), deref(r.AgentStatus), deref(r.Model), num(r.TotalTokens), num(r.ToolUseCount),
				num(r.DurationMs), r.IsAsync, deref(r.ChildSessionID))
		}
	}
	return b.String()
}

// An editor with two sessions and three turns, through the tap to a real
// agent process: every byte passes unchanged both ways, and the tap's
// cards and stored rows are the ones the client itself (run's client
// stack) shows and stores.
func TestTapMultiSessionCardsMatchTheClient(t *testing.T) {
	dir := t.TempDir()
	clientDB, tapDB := filepath.Join(dir, "client.db"), filepath.Join(dir, "tap.db")
	ctx := context.Background()
	clientSink, closeClient, err := openSink(ctx, outputFlags{db: clientDB})
	if err != nil {
		t.Fatal(err)
	}
	tapSink, closeTap, err := openSink(ctx, outputFlags{db: tapDB})
	if err != nil {
		t.Fatal(err)
	}

	proc, err := startAgent([]string{fakeAgent}, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.proc.Terminate()
	var w wire
	var tapLog lockedBuffer
	tapTerm := view.NewTerminal(&tapLog, false)
	obs, err := tap.NewObserver(tap.ObserverConfig{View: tapTerm, Sink: tapSink.record})
	if err != nil {
		t.Fatal(err)
	}
	toTapR, toTapW := io.Pipe()
	fromTapR, fromTapW := io.Pipe()
	tapped := make(chan tap.Stats, 1)
	go func() {
		st, err := tap.Run(ctx, tap.Config{EditorIn: toTapR, EditorOut: fromTapW, Observer: obs}, tap.Agent{
			Stdin: struct {
				io.Writer
				io.Closer
			}{io.MultiWriter(&w.agentGot, proc.stdin), proc.stdin},
			Stdout: io.TeeReader(proc.stdout, &w.agentSent),
			Exited: proc.proc.Exited(), Signal: proc.proc.Signal, Stop: proc.proc.Terminate,
		}, nil)
		if err != nil {
			t.Errorf("tap: %v", err)
		}
		fromTapW.Close()
		tapped <- st
	}()

	clientTerm := view.NewTerminal(io.Discard, false)
	tracker, conn, err := newClientStack(turnConfig{term: clientTerm, sink: clientSink.record, policy: PolicyAllow, cwd: dir},
		io.MultiWriter(toTapW, &w.clientSent), io.TeeReader(fromTapR, &w.clientGot))
	if err != nil {
		t.Fatal(err)
	}
	initReq := acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientInfo: &acp.Implementation{Name: "editor", Version: "1"}}
	initResp, err := conn.Initialize(ctx, initReq)
	if err != nil {
		t.Fatal(err)
	}
	tracker.Initialize(&initReq, &initResp)
	var sessions []string
	for range 2 {
		s, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: dir, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, string(s.SessionId))
		tracker.SessionStarted(string(s.SessionId))
	}
	for _, sid := range []string{sessions[0], sessions[1], sessions[0]} {
		tracker.PromptStarted(sid)
		if _, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(sid), Prompt: []acp.ContentBlock{acp.TextBlock("fan out")}}); err != nil {
			t.Fatal(err)
		}
		tracker.PromptEnded(sid)
	}
	tracker.Flush()
	toTapW.Close() // the editor closes its side: the tap ends the agent
	var st tap.Stats
	select {
	case st = <-tapped:
	case <-time.After(hangGuard):
		t.Fatal("the tap did not end after the editor closed its side")
	}
	_ = conn.Close()
	closeClient()
	closeTap()

	w.check(t)
	if !st.EditorClosed || st.Dropped+st.TooLong+st.Unparsed+st.Unobserved != 0 {
		t.Errorf("stats: %s (editor closed first: %v)", st, st.EditorClosed)
	}
	var clientCards, tapCards bytes.Buffer
	if err := clientTerm.WriteJSON(&clientCards, tracker.Dialect()); err != nil {
		t.Fatal(err)
	}
	if err := tapTerm.WriteJSON(&tapCards, obs.Dialect()); err != nil {
		t.Fatal(err)
	}
	if clientCards.String() != tapCards.String() || clientCards.Len() == 0 {
		t.Errorf("the tap's cards differ from the client's:\n--- client\n%s--- tap\n%s", clientCards.String(), tapCards.String())
	}
	if got := len(parseCards(t, tapCards.String())); got != 4 {
		t.Errorf("want 2 subagent cards in each of 2 sessions, got %d:\n%s", got, tapCards.String())
	}
	want, got := storedCards(t, clientDB, sessions...), storedCards(t, tapDB, sessions...)
	if want != got || want == "" {
		t.Errorf("the tap stored other rows than the client:\n--- client\n%s--- tap\n%s", want, got)
	}
	if !strings.Contains(string(tapLog.Bytes()), "Allow (allow_once)") {
		t.Errorf("the tap's log does not show the editor's permission answer:\n%s", tapLog.Bytes())
	}
}

// `acpscope run` driving an agent through `acpscope tap` (both real
// processes as an editor would run them): run's cards are what it shows
// without a tap, the tap's capture replays to the same cards, the tap
// stores the same rows as run, and standard output carries nothing of
// the tap's own.
func TestTapUnderRunStoresRunsCards(t *testing.T) {
	dir := t.TempDir()
	runDB, tapDB := filepath.Join(dir, "run.db"), filepath.Join(dir, "tap.db")
	runCapture, tapCapture := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "tap.jsonl")
	logPath := filepath.Join(dir, "tap.log")
	code, direct, errOut := acpscope(t, "", "run", "--json", "--no-db", "--permission", "allow", "--prompt", "go", "--", fakeAgent)
	if code != exitOK {
		t.Fatalf("run without the tap: exit %d: %s", code, errOut)
	}
	code, tapped, errOut := acpscope(t, "", "run", "--json", "--db", runDB, "--record", runCapture, "--permission", "allow", "--prompt", "go", "--",
		acpscopeBin, "tap", "--db", tapDB, "--record", tapCapture, "--log", logPath, "--", fakeAgent)
	if code != exitOK {
		t.Fatalf("run through the tap: exit %d: %s", code, errOut)
	}
	if tapped != direct {
		t.Errorf("run shows other cards through the tap:\n--- direct\n%s--- tapped\n%s", direct, tapped)
	}
	code, replayed, errOut := acpscope(t, "", "replay", "--json", "--no-db", "--permission", "allow", tapCapture)
	if code != exitOK {
		t.Fatalf("replay of the tap's capture: exit %d: %s", code, errOut)
	}
	if replayed != tapped {
		t.Errorf("the tap's capture replays to other cards:\n--- run\n%s--- replay\n%s", tapped, replayed)
	}
	if want, got := storedCards(t, runDB, "fake-session"), storedCards(t, tapDB, "fake-session"); want != got || want == "" {
		t.Errorf("the tap stored other rows than run:\n--- run\n%s--- tap\n%s", want, got)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Subagents (2)", "acpscope tap: passed", "0 dropped"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the tap's log lacks %q:\n%s", want, log)
		}
	}
}

// A tap whose agent exits in the middle of a turn passes the end on: it
// ends, and the client's turn fails as it would without the tap.
func TestTapEndsWhenTheAgentExits(t *testing.T) {
	code, _, errOut := acpscope(t, "", "run", "--no-db", "--prompt", "go", "--", acpscopeBin, "tap", "--no-db", "--", fakeAgent, "-mode", "exit")
	if code != exitTurn {
		t.Fatalf("exit %d, want %d: %s", code, exitTurn, errOut)
	}
	if !strings.Contains(errOut, "agent exited with code 3") {
		t.Errorf("the tap did not report the agent's exit:\n%s", errOut)
	}
}

// SIGTERM to the tap reaches the agent, and no agent process outlives
// the tap; standard output holds the agent's bytes only.
func TestTapForwardsSignalsAndLeavesNoAgent(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	pidFile := filepath.Join(dir, "pid")
	// The agent is a shell that records its pid, then runs the fake agent
	// in the hang mode (it never answers the prompt).
	script := fmt.Sprintf(`echo $$ > %s; exec %s -mode hang -ready %s`, pidFile, fakeAgent, ready)
	cmd := exec.Command(acpscopeBin, "tap", "--no-db", "--grace", "200ms", "--", "sh", "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-session","prompt":[{"type":"text","text":"go"}]}}`,
	} {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(hangGuard)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never opened its card; stderr:\n%s", stderr.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("the tap did not end after SIGTERM")
	}
	proctest.AwaitGone(t, []int{pid})
	for _, line := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0"`)) {
			t.Errorf("standard output holds something the agent did not send: %q", line)
		}
	}
	if !strings.Contains(string(stderr.Bytes()), "acpscope tap: passed") {
		t.Errorf("the tap's report is not on standard error:\n%s", stderr.Bytes())
	}
}

// `acpscope tap --web` serves the tap's store while the editor works:
// the session the editor opened is on the page before the editor closes,
// behind the same loopback Host check as `acpscope web`.
func TestTapWebServesTheStoreLive(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tap.db")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logR, logW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"tap", "--db", db, "--web", "127.0.0.1:0", "--", fakeAgent}, inR, outW, logW)
		outW.Close()
		logW.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			if u := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(sc.Text()); u != "" {
				urls <- u
			}
		}
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The editor waits for each answer before it sends the next request,
	// as editors do (the dialect is known from initialize's answer).
	answered := map[string]chan struct{}{"1": make(chan struct{}), "2": make(chan struct{}), "3": make(chan struct{})}
	go func() { // the editor: answers the permission request, notes the answers
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(sc.Bytes(), &m)
			switch {
			case m.Method == "session/request_permission":
				_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`+"\n")
			case m.Method == "" && answered[string(m.ID)] != nil:
				close(answered[string(m.ID)])
			}
		}
	}()
	var u string
	select {
	case u = <-urls:
	case <-time.After(hangGuard):
		t.Fatal("the tap printed no web address")
	}
	for id, req := range []string{
		`"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}`,
		`"method":"session/new","params":{"cwd":"/","mcpServers":[]}`,
		`"method":"session/prompt","params":{"sessionId":"fake-session","prompt":[{"type":"text","text":"go"}]}`,
	} {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, id+1, req))
		select {
		case <-answered[fmt.Sprint(id+1)]:
		case <-time.After(hangGuard):
			t.Fatalf("request %d was not answered", id+1)
		}
	}
	deadline := time.Now().Add(hangGuard)
	for {
		body := httpGet(t, u+"api/session?id=fake-session", "")
		if strings.Contains(body, `"tool_call_id":"toolu_A"`) && strings.Contains(body, "a1b2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live page never showed the turn's card:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if body := httpGet(t, u+"api/sessions", "rebinding.example"); strings.Contains(body, "fake-session") {
		t.Errorf("a request for another Host read the store:\n%s", body)
	}
	inW.Close() // the editor closes: the tap ends, and its web server with it
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("tap exit %d", code)
		}
	case <-time.After(hangGuard):
		t.Fatal("the tap did not end after the editor closed its side")
	}
	if _, err := http.Get(u); err == nil {
		t.Error("the web server still answers after the tap ended")
	}
}

// httpGet returns the body of a GET of u, sent with the given Host header
// when host is not empty.
func httpGet(t *testing.T, u, host string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return string(body)
}
