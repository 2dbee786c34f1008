package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// TestReadTextFileStaysBelowRoot pins what the client serves an agent: a
// regular file below the root, with line and limit applied; never a file
// reached through a symbolic link leading out, a path outside, a FIFO (which
// would block) or a device (which would never end).
func TestReadTextFileStaysBelowRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(root, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &scopeClient{root: root}
	ctx := context.Background()

	line, limit := 2, 1
	resp, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: filepath.Join(root, "a.txt"), Line: &line, Limit: &limit})
	if err != nil || resp.Content != "two\n" {
		t.Fatalf("a.txt line 2 limit 1: %q, %v", resp.Content, err)
	}
	for _, p := range []string{
		filepath.Join(root, "link"),
		filepath.Join(root, "..", filepath.Base(outside), "secret"),
		filepath.Join(root, "zero"),
		filepath.Join(root, "fifo"),
		filepath.Join(root, "missing"),
		"relative.txt",
	} {
		if resp, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: p}); err == nil {
			t.Errorf("%s: served %q, want an error", p, resp.Content)
		}
	}
}

// textRecorder is a textSink that keeps the agent text it is shown.
type textRecorder struct{ text []string }

func (r *textRecorder) AgentMessage(_, _, chunk string) { r.text = append(r.text, chunk) }
func (r *textRecorder) Permission(_, _ string)          {}

// TestChildTextIsNotShownAsTheParents pins that a Copilot child's final
// text, which the agent sends as the parent's own message while the task
// runs, is left to the card (as its result) instead of being shown as the
// parent's words.
func TestChildTextIsNotShownAsTheParents(t *testing.T) {
	tr, err := adapter.NewTracker(adapter.Config{DialectName: adapter.DialectCopilot})
	if err != nil {
		t.Fatal(err)
	}
	out := &textRecorder{}
	c := &scopeClient{tracker: tr, out: out}
	for _, js := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Inspect","kind":"other","status":"pending","rawInput":{"agent_type":"general-purpose","description":"Inspect","prompt":"p"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"CHILD"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","rawOutput":{"content":"CHILD"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"PARENT"}}}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(js), &n); err != nil {
			t.Fatal(err)
		}
		if err := c.SessionUpdate(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(out.text, []string{"PARENT"}) {
		t.Errorf("shown as the parent's text: %q, want only PARENT", out.text)
	}
}

// TestQwenChildTextIsNotShownAsTheParents pins that a Qwen Code child's
// message and thought chunks, which the agent sends on the parent's session
// tagged _meta.parentToolCallId (frames as qwen-code 0.24.4 sends them),
// are never shown as the parent's words, while the parent's own text,
// before and after the child, is.
func TestQwenChildTextIsNotShownAsTheParents(t *testing.T) {
	tr, err := adapter.NewTracker(adapter.Config{DialectName: adapter.DialectQwen})
	if err != nil {
		t.Fatal(err)
	}
	out := &textRecorder{}
	c := &scopeClient{tracker: tr, out: out}
	for _, js := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"BEFORE"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"in_progress","title":"Agent: Inspect","kind":"other","rawInput":{"description":"Inspect","prompt":"p","subagent_type":"general-purpose"},"_meta":{"toolName":"agent","provenance":"builtin","subagentSessionReady":false}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"CHILD-THOUGHT"},"_meta":{"parentToolCallId":"t","subagentType":"general-purpose"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"CHILD"},"_meta":{"parentToolCallId":"t","subagentType":"general-purpose"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","content":[{"type":"content","content":{"type":"text","text":"CHILD"}}],"_meta":{"toolName":"agent","provenance":"builtin"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"PARENT"}}}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(js), &n); err != nil {
			t.Fatal(err)
		}
		if err := c.SessionUpdate(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(out.text, []string{"BEFORE", "PARENT"}) {
		t.Errorf("shown as the parent's text: %q, want only BEFORE and PARENT", out.text)
	}
}
