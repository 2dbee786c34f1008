package main

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// tapMidTurn starts `acpscope tap --db db` in front of the fake agent in
// the hang mode (it opens a card and never answers the prompt), opens its
// session and sends a prompt through a raw editor, and returns once the
// agent opened the card. The caller ends the tap through the returned
// command and the editor's input.
func tapMidTurn(t *testing.T, db string) (*exec.Cmd, io.WriteCloser, <-chan error) {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(acpscopeBin, "tap", "--db", db, "--grace", "200ms", "--log", filepath.Join(dir, "tap.log"), "--", fakeAgent, "-mode", "hang", "-ready", ready)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	exited := make(chan error, 1)
	ed := newRawEditor(t, stdin, out)
	go func() { exited <- cmd.Wait() }()
	ed.request(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	ed.request(2, "session/new", `{"cwd":"/","mcpServers":[]}`)
	if err := ed.write(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-session","prompt":[{"type":"text","text":"go"}]}}`); err != nil {
		t.Fatal(err)
	}
	awaitFile(t, ready, exited)
	return cmd, stdin, exited
}

// awaitOpenCardStored waits until the tap stored the fake agent's open
// card.
func awaitOpenCardStored(t *testing.T, db string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		// The file exists before the tap's migration made its tables: a
		// read then is refused as needing migration, which is not yet.
		if migrated(db) {
			if _, cards := sessionStatus(t, db); len(cards) > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the tap never stored the open card")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// migrated reports whether the store at db opens for reading: it exists
// and its schema is made.
func migrated(db string) bool {
	s, err := persistence.OpenReadOnly(context.Background(), db)
	if err != nil {
		return false
	}
	s.Close()
	return true
}

// sessionStatus is the stored status of the fake agent's session and the
// tool status of each of its cards.
func sessionStatus(t *testing.T, db string) (string, map[string]string) {
	t.Helper()
	s, err := persistence.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.ListSessions(context.Background(), persistence.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	status := ""
	for _, sum := range list {
		if sum.ID == "fake-session" {
			status = sum.Status
		}
	}
	cards := map[string]string{}
	for call, r := range storedRows(t, db, "fake-session") {
		cards[call] = deref(r.ToolStatus)
	}
	return status, cards
}

// A tap ended in the middle of a turn, by the editor closing its side or
// by a stop signal, stores the open card cancelled, as run stores a turn
// it cancels, so the session is not open for good, and its writer
// confirmed every card: health is healthy (before, the card stayed
// in_progress and the session open, and health said healthy all the
// same).
func TestTapEndedMidTurnStoresCancelled(t *testing.T) {
	for _, end := range []struct {
		name string
		end  func(cmd *exec.Cmd, stdin io.Closer) error
	}{
		{"editor-closes", func(_ *exec.Cmd, stdin io.Closer) error { return stdin.Close() }},
		{"SIGTERM", func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGHUP", func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(syscall.SIGHUP) }},
	} {
		t.Run(end.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "tap.db")
			cmd, stdin, exited := tapMidTurn(t, db)
			// The agent wrote its tool call; the tap's observer (a nice-19
			// thread) may not have read it yet, and after a signal it gets
			// at most 0.5 s to catch up. What is tested here is the ending
			// of an observed card, so the card is first seen stored.
			awaitOpenCardStored(t, db)
			if err := end.end(cmd, stdin); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(hangGuard):
				t.Fatal("the tap did not end")
			}
			status, cards := sessionStatus(t, db)
			if status != persistence.SessionCancelled || len(cards) != 1 || cards["toolu_LONG"] != "cancelled" {
				t.Errorf("session %s, cards %v; want cancelled, the open card cancelled", status, cards)
			}
			if code, out, errOut := acpscope(t, "", "health", "--db", db); code != exitOK || strings.Contains(out, "writer:") {
				t.Errorf("health: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// A tap killed (SIGKILL) in the middle of a turn cannot store its
// ending: the card stays open, and health reports the writer that did not
// confirm its cards, so the open session is never taken for the truth.
func TestTapKilledMidTurnIsNotHealthy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tap.db")
	cmd, _, exited := tapMidTurn(t, db)
	awaitOpenCardStored(t, db)
	_ = cmd.Process.Kill()
	<-exited
	code, out, _ := acpscope(t, "", "health", "--db", db)
	if code != exitTurn || !strings.Contains(out, "writer:") || !strings.Contains(out, "running since") {
		t.Errorf("health after the tap was killed: exit %d, want %d and the writer named as unconfirmed:\n%s", code, exitTurn, out)
	}
}
