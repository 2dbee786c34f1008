package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/tap"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// scriptedTap is an in-process tap, wired as cmdTap wires it (the sink
// fan-out, turn spans, the store flushed and confirmed once observed),
// between an editor and an agent that the test plays line by line: each
// line one side sends is read on the other side before the test goes on,
// so the wire order is the script's.
type scriptedTap struct {
	t                 *testing.T
	editorIn, agentTo *io.PipeWriter // what the editor and the agent write
	toAgent, toEditor chan string    // what the agent and the editor receive
	done              chan tap.Stats
}

// newScriptedTap starts the tap with its store on dsn.
func newScriptedTap(t *testing.T, dsn string) *scriptedTap {
	t.Helper()
	store, err := openSink(context.Background(), outputFlags{db: dsn}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	term := view.NewTerminal(io.Discard, false)
	obs, err := tap.NewObserver(tap.ObserverConfig{View: term, Sink: sinks(term, store, nil), TurnStarted: store.BeginTurn})
	if err != nil {
		t.Fatal(err)
	}
	st := &scriptedTap{t: t, toAgent: make(chan string, 64), toEditor: make(chan string, 64), done: make(chan tap.Stats, 1)}
	editorInR, editorInW := io.Pipe()
	editorOutR, editorOutW := io.Pipe()
	agentInR, agentInW := io.Pipe()
	agentOutR, agentOutW := io.Pipe()
	st.editorIn, st.agentTo = editorInW, agentOutW
	exited := make(chan struct{})
	var stop sync.Once
	end := func() {
		stop.Do(func() {
			agentOutW.Close()
			close(exited)
		})
	}
	lines := func(r io.Reader, to chan<- string, atEOF func()) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			to <- sc.Text()
		}
		close(to)
		if atEOF != nil {
			atEOF()
		}
	}
	go lines(agentInR, st.toAgent, end) // an ACP agent ends at the end of its input
	go lines(editorOutR, st.toEditor, nil)
	go func() {
		stats, err := tap.Run(context.Background(), tap.Config{
			EditorIn: editorInR, EditorOut: editorOutW, Observer: obs, Grace: time.Minute,
			Observed: func(tap.Stats, error) {
				_ = store.endTurn(context.Background(), io.Discard, outputFlags{}, nil)
				store.Sink.Close()
			},
		}, tap.Agent{Stdin: agentInW, Stdout: agentOutR, Exited: exited, Signal: func(syscall.Signal) {}, Stop: end}, nil)
		if err != nil {
			t.Errorf("tap: %v", err)
		}
		editorOutW.Close()
		store.close()
		st.done <- stats
	}()
	return st
}

// pass writes line on w and waits until it came out of the tap on the
// other side, unchanged.
func (s *scriptedTap) pass(w io.Writer, out <-chan string, line string) {
	s.t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
	select {
	case got := <-out:
		if got != line {
			s.t.Fatalf("the tap passed %q, want %q", got, line)
		}
	case <-time.After(hangGuard):
		s.t.Fatalf("%q did not pass the tap", line)
	}
}

// editor sends an editor line; agent an agent line.
func (s *scriptedTap) editor(line string) { s.t.Helper(); s.pass(s.editorIn, s.toAgent, line) }
func (s *scriptedTap) agent(line string)  { s.t.Helper(); s.pass(s.agentTo, s.toEditor, line) }

// quit closes the editor's side, as an editor that quits does, and waits
// for the tap to end.
func (s *scriptedTap) quit() tap.Stats {
	s.t.Helper()
	s.editorIn.Close()
	select {
	case st := <-s.done:
		return st
	case <-time.After(hangGuard):
		s.t.Fatal("the tap did not end after the editor quit")
	}
	return tap.Stats{}
}

// childLine is a subagent_update of child in parent's session.
func childLine(parent, child, state string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + parent +
		`","update":{"sessionUpdate":"subagent_update","sessionId":"` + child + `","title":"` + child + `","state":` + state + `}}}`
}

// prompt and answer are a session/prompt of the editor and the agent's
// answer to it.
func promptLine(id, session string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + session + `","prompt":[{"type":"text","text":"go"}]}}`
}

func answerLine(id, stop string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"stopReason":"` + stop + `"}}`
}

const (
	runningState = `{"state":"running"}`
	endTurnState = `{"state":"idle","stopReason":"end_turn"}`
)

// An editor with three sessions at once on one agent, through the tap:
// interleaved prompts, a cancel in S1 while S2's children run, a
// session/load of S3 with history, a child of S3 that completes after its
// turn and one that never does, and the editor quitting while a prompt of
// S1 is open. S2's children are stored complete, each prompt is one turn
// (S1's prompt does not split S2's), and no session stays open: the open
// prompt's card is cancelled, the child that outlived its turn unknown.
// Before, S1's cancelled turn stored S2's and S3's running children
// cancelled, S2's first prompt was two turns, and the last cards stayed
// in_progress.
func TestTapThreeSessionsOnOneAgent(t *testing.T) {
	for _, engine := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "tap.db") }},
		{"postgres", func(t *testing.T) string { return postgresDSN(t) }},
	} {
		t.Run(engine.name, func(t *testing.T) {
			dsn := engine.dsn(t)
			s := newScriptedTap(t, dsn)
			s.editor(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}}`)
			s.agent(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"scripted","version":"1"},"agentCapabilities":{"loadSession":true}}}`)
			s.editor(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
			s.agent(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"S1"}}`)
			s.editor(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
			s.agent(`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"S2"}}`)
			s.editor(`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"S3","cwd":"/","mcpServers":[]}}`)
			s.agent(childLine("S3", "s3-old", endTurnState)) // history
			s.agent(`{"jsonrpc":"2.0","id":4,"result":{}}`)

			s.editor(promptLine("5", "S2"))
			s.agent(childLine("S2", "s2-a", runningState))
			s.editor(promptLine("6", "S1"))
			s.agent(childLine("S1", "s1-a", runningState))
			s.agent(childLine("S2", "s2-b", runningState)) // S2's prompt goes on after S1's began
			s.editor(promptLine("7", "S3"))
			s.agent(childLine("S3", "s3-bg", runningState))
			s.agent(childLine("S3", "s3-lost", runningState))
			s.agent(answerLine("7", "end_turn")) // both S3 children outlive the turn
			s.editor(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S1"}}`)
			s.agent(answerLine("6", "cancelled")) // s1-a left open by the agent
			s.agent(childLine("S2", "s2-a", endTurnState))
			s.agent(childLine("S2", "s2-b", endTurnState))
			s.agent(answerLine("5", "end_turn"))

			s.editor(promptLine("8", "S2"))
			s.agent(childLine("S2", "s2-c", runningState))
			s.agent(childLine("S3", "s3-bg", endTurnState)) // completes after its turn
			s.agent(childLine("S2", "s2-c", endTurnState))
			s.agent(answerLine("8", "end_turn"))

			s.editor(promptLine("9", "S1"))
			s.agent(childLine("S1", "s1-b", runningState))
			if st := s.quit(); st.Dropped+st.TooLong+st.Unparsed+st.Unobserved != 0 || !st.EditorClosed {
				t.Errorf("stats: %s (editor closed first: %v)", st, st.EditorClosed)
			}

			rows := map[string]persistence.SubagentContext{}
			for _, sid := range []string{"S1", "S2", "S3"} {
				for call, r := range storedRows(t, dsn, sid) {
					rows[call] = r
				}
			}
			status := func(call string) string { return deref(rows[call].ToolStatus) }
			turn := func(call string) string { return deref(rows[call].TurnID) }
			for call, want := range map[string]string{
				"s2-a": "complete", "s2-b": "complete", "s2-c": "complete", "s3-old": "complete", "s3-bg": "complete",
				"s1-a": "cancelled", "s1-b": "cancelled", "s3-lost": "unknown",
			} {
				if got := status(call); got != want {
					t.Errorf("%s stored %s, want %s", call, got, want)
				}
			}
			// One turn per prompt: S2's first prompt is one turn, whatever
			// S1 and S3 did meanwhile; every prompt is a turn of its own;
			// S3's children share its prompt's turn, not the history's.
			if turn("s2-a") != turn("s2-b") || turn("s3-bg") != turn("s3-lost") {
				t.Errorf("a prompt split into turns: s2-a %s s2-b %s, s3-bg %s s3-lost %s", turn("s2-a"), turn("s2-b"), turn("s3-bg"), turn("s3-lost"))
			}
			seen := map[string]string{}
			for _, call := range []string{"s1-a", "s1-b", "s2-a", "s2-c", "s3-old", "s3-bg"} {
				if other, ok := seen[turn(call)]; ok || turn(call) == "" {
					t.Errorf("%s and %s share turn %q", call, other, turn(call))
				}
				seen[turn(call)] = call
			}
			want := map[string]string{"S1": persistence.SessionCancelled, "S2": persistence.SessionComplete, "S3": persistence.SessionUnknown}
			store, err := persistence.OpenReadOnly(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			list, err := store.ListSessions(context.Background(), persistence.SessionFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, sum := range list {
				if sum.Status != want[sum.ID] || sum.Turns != 2 {
					t.Errorf("session %s: %s, %d turns; want %s, 2 turns", sum.ID, sum.Status, sum.Turns, want[sum.ID])
				}
				delete(want, sum.ID)
			}
			if len(want) != 0 {
				t.Errorf("sessions not stored: %v", want)
			}
		})
	}
}
