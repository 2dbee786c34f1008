package cursor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// FuzzCursorSequence plays a script of agent traffic through a Cursor
// connection with small pending limits: each line is a session/update's
// params, "t" then cursor/task params, or "e" (the turn of s1 ends and the
// next one starts). The session updates meet the Cursor dialect's hooks and
// the pending store in any order. Every request is answered {}, nothing
// panics, every event encodes, and the pending store never holds a negative
// number of entries.
func FuzzCursorSequence(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, file := range files {
		if seed := cursorScript(file); len(seed) > 0 {
			f.Add(seed)
		}
	}
	f.Add([]byte("t" + paramsFull + "\n" + `{"sessionId":"s1","update":` + frameToolCall + "}\ne\nt" + paramsFull))
	f.Fuzz(func(t *testing.T, script []byte) {
		d := cursor.NewDialect(cursor.Options{Limits: cursor.Limits{MaxPending: 2, MaxPendingBytes: 4096, MaxPendingSessions: 2}})
		c := newConn(t, adapter.Config{Dialect: d, MaxCompleted: 4})
		c.tracker.SessionStarted("s1")
		c.tracker.PromptStarted("s1")
		for _, line := range bytes.Split(script, []byte("\n")) {
			switch {
			case len(line) == 0:
			case line[0] == 't':
				res, err := c.handler.HandleExtensionMethod(context.Background(), cursor.MethodTask, line[1:])
				if err != nil || res != (struct{}{}) {
					t.Fatalf("answered %v, %v", res, err)
				}
			case line[0] == 'e':
				c.tracker.PromptEnded("s1")
				c.tracker.PromptStarted("s1")
			default:
				var n acp.SessionNotification
				if json.Unmarshal(line, &n) == nil {
					c.tracker.SessionUpdate(n)
				}
			}
		}
		c.tracker.PromptEnded("s1")
		if n := c.tracker.Counters()[adapter.CounterRecoveredPanics]; n != 0 {
			t.Fatalf("%d panics recovered", n)
		}
		for _, e := range c.snapshot() {
			if _, err := json.Marshal(e); err != nil {
				t.Fatalf("event does not encode: %v", err)
			}
		}
		if left := pendingLeft(run{res: &adapter.ReplayResult{Counters: c.tracker.Counters()}}); left < 0 {
			t.Fatalf("pending store holds %d entries", left)
		}
	})
}

// cursorScript turns a capture's agent traffic into a FuzzCursorSequence
// script.
func cursorScript(file string) []byte {
	c, err := capture.ReadFile(file)
	if err != nil {
		return nil
	}
	var script []byte
	for _, e := range c.Entries {
		m, err := capture.ParseMessage(e.Msg)
		if err != nil || e.From != capture.FromAgent {
			continue
		}
		switch m.Method {
		case acp.ClientMethodSessionUpdate:
			script = append(append(script, m.Params...), '\n')
		case cursor.MethodTask:
			script = append(append(append(script, 't'), m.Params...), '\n')
		}
	}
	return script
}
