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
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
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

// tappedEditor is an editor (run's client stack) talking through an
// in-process tap to a real agent process, with the bytes recorded at both
// ends and a store on each side of the tap.
type tappedEditor struct {
	t               *testing.T
	conn            *acp.ClientSideConnection
	tracker         *adapter.Tracker
	clientTerm      *view.Terminal
	tapTerm         *view.Terminal
	obs             *tap.Observer
	tapLog          lockedBuffer
	w               wire
	clientDB, tapDB string
	closeStores     func()
	toTap           io.Closer
	tapped          chan tap.Stats
	sessions        []string
}

// newTappedEditor starts the agent command under the tap and connects an
// editor to it.
func newTappedEditor(t *testing.T, command ...string) *tappedEditor {
	dir := t.TempDir()
	ed := &tappedEditor{t: t, clientDB: filepath.Join(dir, "client.db"), tapDB: filepath.Join(dir, "tap.db"), tapped: make(chan tap.Stats, 1)}
	ctx := context.Background()
	clientSink, err := openSink(ctx, outputFlags{db: ed.clientDB}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tapSink, err := openSink(ctx, outputFlags{db: ed.tapDB}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Both sinks write asynchronously: each is flushed and closed before
	// the stores are compared.
	ed.closeStores = func() {
		clientSink.flushTurn(outputFlags{}, nil)
		clientSink.close()
		tapSink.flushTurn(outputFlags{}, nil)
		tapSink.close()
	}
	agent, err := session.StartAgent(command, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	proc := agent.Process()
	t.Cleanup(proc.Terminate)
	ed.tapTerm = view.NewTerminal(&ed.tapLog, false)
	if ed.obs, err = tap.NewObserver(tap.ObserverConfig{View: ed.tapTerm, Sink: sinks(ed.tapTerm, tapSink, nil)}); err != nil {
		t.Fatal(err)
	}
	toTapR, toTapW := io.Pipe()
	fromTapR, fromTapW := io.Pipe()
	ed.toTap = toTapW
	go func() {
		st, err := tap.Run(ctx, tap.Config{EditorIn: toTapR, EditorOut: fromTapW, Observer: ed.obs}, tap.Agent{
			Stdin: struct {
				io.Writer
				io.Closer
			}{io.MultiWriter(&ed.w.agentGot, agent.Stdin), agent.Stdin},
			Stdout: io.TeeReader(agent.Stdout, &ed.w.agentSent),
			Exited: proc.Exited(), Signal: proc.Signal, Stop: proc.Terminate,
		}, nil)
		if err != nil {
			t.Errorf("tap: %v", err)
		}
		fromTapW.Close()
		ed.tapped <- st
	}()
	ed.clientTerm = view.NewTerminal(io.Discard, false)
	ed.tracker, ed.conn, err = session.NewClientStack(session.Config{Term: ed.clientTerm, Sink: sinks(ed.clientTerm, clientSink, nil), Policy: session.PolicyAllow, Cwd: dir},
		io.MultiWriter(toTapW, &ed.w.clientSent), io.TeeReader(fromTapR, &ed.w.clientGot))
	if err != nil {
		t.Fatal(err)
	}
	initReq := acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientInfo: &acp.Implementation{Name: "editor", Version: "1"}}
	initResp, err := ed.conn.Initialize(ctx, initReq)
	if err != nil {
		t.Fatal(err)
	}
	ed.tracker.Initialize(&initReq, &initResp)
	return ed
}

// newSession opens a session, as the editor's client stack records it.
func (ed *tappedEditor) newSession() string {
	s, err := ed.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: "/", McpServers: []acp.McpServer{}})
	if err != nil {
		ed.t.Fatal(err)
	}
	ed.sessions = append(ed.sessions, string(s.SessionId))
	ed.tracker.SessionStarted(string(s.SessionId))
	return string(s.SessionId)
}

// loadSession loads a session (its history arrives before the answer).
func (ed *tappedEditor) loadSession(sid string) {
	ed.tracker.SessionLoaded(sid)
	_, err := ed.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: acp.SessionId(sid), Cwd: "/", McpServers: []acp.McpServer{}})
	ed.tracker.SessionLoadFinished(sid, err == nil)
	if err != nil {
		ed.t.Fatal(err)
	}
	ed.sessions = append(ed.sessions, sid)
}

// prompt runs one turn in the session.
func (ed *tappedEditor) prompt(sid string) {
	ed.tracker.PromptStarted(sid)
	if _, err := ed.conn.Prompt(context.Background(), acp.PromptRequest{SessionId: acp.SessionId(sid), Prompt: []acp.ContentBlock{acp.TextBlock("fan out")}}); err != nil {
		ed.t.Fatal(err)
	}
	ed.tracker.PromptEnded(sid)
}

// finish closes the editor's side and checks the tapped connection: every
// byte passed unchanged, every line observed, and the tap's cards and
// stored rows are the client's. It returns the tap's cards.
func (ed *tappedEditor) finish() string {
	t := ed.t
	t.Helper()
	ed.tracker.Flush()
	ed.toTap.Close() // the editor closes its side: the tap ends the agent
	var st tap.Stats
	select {
	case st = <-ed.tapped:
	case <-time.After(hangGuard):
		t.Fatal("the tap did not end after the editor closed its side")
	}
	_ = ed.conn.Close()
	ed.closeStores()
	ed.w.check(t)
	if !st.EditorClosed || st.Dropped+st.TooLong+st.Unparsed+st.Unobserved != 0 {
		t.Errorf("stats: %s (editor closed first: %v)", st, st.EditorClosed)
	}
	var clientCards, tapCards bytes.Buffer
	if err := ed.clientTerm.WriteJSON(&clientCards, ed.tracker.Dialect()); err != nil {
		t.Fatal(err)
	}
	if err := ed.tapTerm.WriteJSON(&tapCards, ed.obs.Dialect()); err != nil {
		t.Fatal(err)
	}
	if clientCards.String() != tapCards.String() || clientCards.Len() == 0 {
		t.Errorf("the tap's cards differ from the client's:\n--- client\n%s--- tap\n%s", clientCards.String(), tapCards.String())
	}
	want, got := storedCards(t, ed.clientDB, ed.sessions...), storedCards(t, ed.tapDB, ed.sessions...)
	if want != got || want == "" {
		t.Errorf("the tap stored other rows than the client:\n--- client\n%s--- tap\n%s", want, got)
	}
	return tapCards.String()
}

// An editor with two sessions and three turns, through the tap to a real
// agent process: every byte passes unchanged both ways, and the tap's
// cards and stored rows are the ones the client itself (run's client
// stack) shows and stores.
func TestTapMultiSessionCardsMatchTheClient(t *testing.T) {
	ed := newTappedEditor(t, fakeAgent)
	a, b := ed.newSession(), ed.newSession()
	ed.prompt(a)
	ed.prompt(b)
	ed.prompt(a)
	if got := len(parseCards(t, ed.finish())); got != 4 {
		t.Errorf("want 2 subagent cards in each of 2 sessions, got %d", got)
	}
	if !strings.Contains(string(ed.tapLog.Bytes()), "Allow (allow_once)") {
		t.Errorf("the tap's log does not show the editor's permission answer:\n%s", ed.tapLog.Bytes())
	}
}

// A loaded session's history (a burst of 600 updates before the
// answer) and a turn after it: the tap keeps up, observes every line and
// stores what the client stores.
func TestTapLoadedSessionCardsMatchTheClient(t *testing.T) {
	ed := newTappedEditor(t, fakeAgent, "-mode", "burst", "-updates", "600", "-per", "30")
	ed.loadSession("fake-session")
	ed.prompt("fake-session")
	if got := len(parseCards(t, ed.finish())); got != 20 {
		t.Errorf("want the 20 subagents of the burst, got %d", got)
	}
}

// runUnderTap runs `acpscope run --json` with flags and the agent command,
// once directly and once through `acpscope tap` (both real processes, as
// an editor would run them), wanting exit code want from both. Run must
// show the same cards either way, the tap's capture must replay to them,
// and the tap must store the rows run stores. It returns the tap's log.
func runUnderTap(t *testing.T, want int, flags []string, agent ...string) string {
	t.Helper()
	dir := t.TempDir()
	runDB, tapDB := filepath.Join(dir, "run.db"), filepath.Join(dir, "tap.db")
	tapCapture, logPath := filepath.Join(dir, "tap.jsonl"), filepath.Join(dir, "tap.log")
	args := append([]string{"run", "--json", "--prompt", "go"}, flags...)
	direct := append(append(slices.Clone(args), "--no-db", "--"), agent...)
	code, directCards, errOut := acpscope(t, "", direct...)
	if code != want {
		t.Fatalf("run without the tap: exit %d, want %d: %s", code, want, errOut)
	}
	tapped := append(slices.Clone(args), "--db", runDB, "--", acpscopeBin, "tap", "--db", tapDB, "--record", tapCapture, "--log", logPath, "--")
	code, tappedCards, errOut := acpscope(t, "", append(tapped, agent...)...)
	if code != want {
		t.Fatalf("run through the tap: exit %d, want %d: %s", code, want, errOut)
	}
	if tappedCards != directCards || directCards == "" {
		t.Errorf("run shows other cards through the tap:\n--- direct\n%s--- tapped\n%s", directCards, tappedCards)
	}
	code, replayed, errOut := acpscope(t, "", append(append([]string{"replay", "--json", "--no-db"}, flags...), tapCapture)...)
	if code != exitOK { // a replay plays the agent's answers, cancelled or not
		t.Fatalf("replay of the tap's capture: exit %d: %s", code, errOut)
	}
	if replayed != tappedCards {
		t.Errorf("the tap's capture replays to other cards:\n--- run\n%s--- replay\n%s", tappedCards, replayed)
	}
	if want, got := storedCards(t, runDB, "fake-session"), storedCards(t, tapDB, "fake-session"); want != got || want == "" {
		t.Errorf("the tap stored other rows than run:\n--- run\n%s--- tap\n%s", want, got)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "acpscope tap: passed") || !strings.Contains(string(log), "not observed: 0 dropped (observer busy), 0 too long, 0 not JSON-RPC, 0 left") {
		t.Errorf("the tap's log lacks its report of every line observed:\n%s", log)
	}
	return string(log)
}

// The tap under run shows, records and stores run's cards.
func TestTapUnderRunStoresRunsCards(t *testing.T) {
	if log := runUnderTap(t, exitOK, []string{"--permission", "allow"}, fakeAgent); !strings.Contains(log, "Subagents (2)") {
		t.Errorf("the tap's log does not show the cards:\n%s", log)
	}
}

// A turn cancelled by run (--timeout: session/cancel, the agent answers
// cancelled): the tap ends the open card cancelled as run does, in its
// store and in its capture's replay.
func TestTapCancelledTurnMatchesRun(t *testing.T) {
	log := runUnderTap(t, exitCancelled, []string{"--timeout", "1s", "--cancel-grace", "10s"}, fakeAgent, "-mode", "cancel")
	if !strings.Contains(log, "[cancelled]") {
		t.Errorf("the tap's log does not show the card cancelled:\n%s", log)
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

// An editor that does not wait for the agent to exit, as acpscope run
// does: it closes the tap's input, SIGTERMs the tap twice (run's process
// guard signals the tap's group and then the tap; here the second comes
// once the first has reached the agent), and kills the tap soon after. The agent is slow to exit (it ignores SIGTERM and stays
// after its input ended, as codex-acp does while its app-server stops) and
// the tap's grace is an hour: the tap still stores every card it observed
// and then writes its closing report without waiting for the agent, and
// once the editor killed it no agent process is left.
func TestTapEndsForAnEditorThatDoesNotWait(t *testing.T) {
	dir := t.TempDir()
	tapDB, runDB := filepath.Join(dir, "tap.db"), filepath.Join(dir, "run.db")
	pidFile, termed := filepath.Join(dir, "pid"), filepath.Join(dir, "termed")
	script := fmt.Sprintf(`echo $$ > %s; exec %s -linger -termed %s`, pidFile, fakeAgent, termed)
	cmd := exec.Command(acpscopeBin, "tap", "--db", tapDB, "--grace", "1h", "--", "sh", "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, logW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	logW.Close()
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var log lockedBuffer
	reported := make(chan struct{})
	go func() { // the tap's log, to its end
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			fmt.Fprintln(&log, sc.Text())
			if strings.HasPrefix(sc.Text(), "acpscope tap: passed") {
				close(reported)
			}
		}
	}()
	newRawEditor(t, stdin, outR).openAndPrompt()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var agentPid int
	if _, err := fmt.Sscan(string(data), &agentPid); err != nil {
		t.Fatal(err)
	}

	stdin.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	awaitFile(t, termed, exited)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reported:
	case err := <-exited:
		t.Fatalf("the tap ended (%v) without its closing report:\n%s", err, log.Bytes())
	case <-time.After(hangGuard):
		t.Fatalf("the tap wrote no closing report while the agent lingered:\n%s", log.Bytes())
	}
	_ = cmd.Process.Kill() // the editor's patience ends
	<-exited
	proctest.AwaitGone(t, []int{agentPid})
	if !strings.Contains(string(log.Bytes()), "not observed: 0 dropped (observer busy), 0 too long, 0 not JSON-RPC, 0 left") {
		t.Errorf("the tap's report does not account for every line observed:\n%s", log.Bytes())
	}
	// The same turn stored by run, directly: the tap stored all of it.
	if code, _, errOut := acpscope(t, "", "run", "--db", runDB, "--permission", "allow", "--prompt", "go", "--", fakeAgent); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if want, got := storedCards(t, runDB, "fake-session"), storedCards(t, tapDB, "fake-session"); want != got || want == "" {
		t.Errorf("the tap stored other rows than run:\n--- run\n%s--- tap\n%s", want, got)
	}
	// Its writer confirmed its cards before the report, so the kill that
	// followed leaves a healthy store.
	if code, out, errOut := acpscope(t, "", "health", "--db", tapDB); code != exitOK {
		t.Errorf("health after a tap killed once it reported: exit %d\n%s%s", code, out, errOut)
	}
}

// awaitFile waits until the file at path exists; the process whose end
// exited reports must not end first.
func awaitFile(t *testing.T, path string, exited <-chan error) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("the process ended (%v) before %s appeared", err, path)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
	}
}

// `acpscope tap --web` serves the tap's store while the editor works:
// the session the editor opened is on the page before the editor closes,
// behind the same loopback Host check as `acpscope web`.
func TestTapWebServesTheStoreLive(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tap.db")
	ed, inW, u, done := startTapWeb(t, []string{"tap", "--db", db, "--web", "127.0.0.1:0", "--", fakeAgent})
	ed.openAndPrompt()
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
	checkTapTraffic(t, u)
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

// startTapWeb runs acpscope with args (a tap with --web on port 0) in
// this process, behind a raw editor, and returns the editor, the writer
// of the tap's standard input (closing it is the editor closing), the
// address the tap printed and its exit code once it ends.
func startTapWeb(t *testing.T, args []string) (*rawEditor, io.WriteCloser, string, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logR, logW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), args, inR, outW, logW)
		outW.Close()
		logW.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		address := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			if u := address.FindString(sc.Text()); u != "" {
				urls <- u
			}
		}
	}()
	ed := newRawEditor(t, inW, outR)
	select {
	case u := <-urls:
		return ed, inW, u, done
	case <-time.After(hangGuard):
		t.Fatal("the tap printed no web address")
	}
	return nil, nil, "", nil
}

// rawEditor is an editor speaking raw JSON-RPC lines to a tap: it sends
// requests and waits for their answers, and answers the agent's
// permission requests (allow), as an editor waits for each answer before
// it sends the next request.
type rawEditor struct {
	t        *testing.T
	in       io.Writer // a line is one Write: whole on a pipe of either kind
	mu       sync.Mutex
	answered map[string]chan struct{} // request id → closed once answered
}

// newRawEditor starts an editor writing to in (the tap's standard input)
// and reading out (its standard output) to its end.
func newRawEditor(t *testing.T, in io.Writer, out io.Reader) *rawEditor {
	ed := &rawEditor{t: t, in: in, answered: map[string]chan struct{}{}}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(sc.Bytes(), &m)
			switch {
			case m.Method == "session/request_permission":
				_ = ed.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
			case m.Method == "" && m.ID != nil:
				ed.mu.Lock()
				if c := ed.answered[string(m.ID)]; c != nil {
					close(c)
					delete(ed.answered, string(m.ID))
				}
				ed.mu.Unlock()
			}
		}
	}()
	return ed
}

// write sends one line.
func (ed *rawEditor) write(line string) error {
	_, err := io.WriteString(ed.in, line+"\n")
	return err
}

// request sends request id with the given method and params and waits
// for its answer.
func (ed *rawEditor) request(id int, method, params string) {
	ed.t.Helper()
	answered := make(chan struct{})
	ed.mu.Lock()
	ed.answered[fmt.Sprint(id)] = answered
	ed.mu.Unlock()
	if err := ed.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)); err != nil {
		ed.t.Fatal(err)
	}
	select {
	case <-answered:
	case <-time.After(hangGuard):
		ed.t.Fatalf("request %d (%s) was not answered", id, method)
	}
}

// openAndPrompt initializes, opens the fake agent's session and runs one
// turn in it ("go"), each request answered before the next.
func (ed *rawEditor) openAndPrompt() {
	ed.t.Helper()
	ed.request(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	ed.request(2, "session/new", `{"cwd":"/","mcpServers":[]}`)
	ed.request(3, "session/prompt", `{"sessionId":"fake-session","prompt":[{"type":"text","text":"go"}]}`)
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

// An agent that writes and exits at once: everything it wrote reaches the
// editor, the tail still in the pipe when it exited included. The editor's
// input is empty, so the agent's --grace runs from the start: it is an hour
// here, or a loaded machine would see the tap stop an agent still writing
// (it did: 2,498,560 of 4,194,304 bytes), which is --grace doing its job.
func TestTapForwardsTheAgentsLastOutput(t *testing.T) {
	const size = 4 << 20
	for i := range 5 {
		var out bytes.Buffer
		code := run(context.Background(), []string{"tap", "--no-db", "--grace", "1h", "--", "sh", "-c", fmt.Sprintf("head -c %d /dev/zero", size)},
			strings.NewReader(""), &out, io.Discard)
		if code != exitOK || out.Len() != size {
			t.Fatalf("run %d: exit %d, the editor got %d of the agent's %d bytes", i, code, out.Len(), size)
		}
	}
}

// turnPartition renders which stored cards of session share a turn id:
// the cards of each turn (in tool call order), the turns in the order of
// their first cards.
func turnPartition(t *testing.T, dsn, session string) string {
	t.Helper()
	var order []string
	calls := map[string][]string{}
	for call, r := range storedRows(t, dsn, session) {
		turn := deref(r.TurnID)
		if _, ok := calls[turn]; !ok {
			order = append(order, turn)
		}
		calls[turn] = append(calls[turn], call)
	}
	var parts []string
	for _, turn := range order {
		slices.Sort(calls[turn])
		parts = append(parts, strings.Join(calls[turn], "+"))
	}
	slices.Sort(parts)
	return strings.Join(parts, " | ")
}

// The tap marks turns as run does: a prompt the editor sends while none
// of the session is open starts a turn span, and a prompt queued behind
// an open one joins its span, so the tap stores each card under the turn
// run stores it under (before, the tap stored every card of a session
// under one turn).
func TestTapMarksTurnsAsRunDoes(t *testing.T) {
	dir := t.TempDir()
	runDB, tapDB := filepath.Join(dir, "run.db"), filepath.Join(dir, "tap.db")
	args := []string{"run", "--json", "--db", runDB, "--cwd", dir, "--prompt", "first task", "--queue", "second task", "--prompt", "third task", "--",
		acpscopeBin, "tap", "--db", tapDB, "--log", filepath.Join(dir, "tap.log"), "--",
		fakeAgent, "-mode", "turns", "-hold", "2", "-state", filepath.Join(dir, "state")}
	if code, _, errOut := acpscope(t, "", args...); code != exitOK {
		t.Fatalf("run through the tap: exit %d: %s", code, errOut)
	}
	want, got := turnPartition(t, runDB, "fake-session"), turnPartition(t, tapDB, "fake-session")
	if want != "toolu_T1+toolu_T2 | toolu_T3" || got != want {
		t.Fatalf("turns stored by run %q, by the tap %q; want both %q", want, got, "toolu_T1+toolu_T2 | toolu_T3")
	}
}

// An AIR-declaring client (run --as jetbrains-air) through the tap, to an
// agent whose child outlives its turn: identical bytes, and the tap shows,
// records and stores the cards run does, the child settled after the
// answer.
func TestTapAIRChildPastItsTurnMatchesRun(t *testing.T) {
	log := runUnderTap(t, exitOK, []string{"--as", "jetbrains-air"}, fakeAgent, "-mode", "air")
	if !strings.Contains(log, "Background review [complete]") {
		t.Errorf("the tap's log does not show the child settled:\n%s", log)
	}
}
