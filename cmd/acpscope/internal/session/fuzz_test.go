package session

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// FuzzReadTextFile sends fs/read_text_file requests with any path, line and
// limit. The handler must not panic, must never serve what lies outside the
// root (here a file reached through a symbolic link), and what it serves is
// a run of whole lines of the file, the requested window clamped to it.
func FuzzReadTextFile(f *testing.F) {
	root := f.TempDir()
	outside := f.TempDir()
	const text = "one\ntwo\nthree\n"
	for name, data := range map[string]string{filepath.Join(root, "a.txt"): text, filepath.Join(outside, "secret"): "SECRET\n"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		f.Fatal(err)
	}
	f.Add("a.txt", true, 2, true, 1)
	f.Add("out/secret", false, 0, false, 0)
	f.Add("../"+filepath.Base(outside)+"/secret", true, 1, true, 5)
	f.Add("a.txt", true, math.MaxInt, true, -1)
	f.Add("a.txt", false, 0, true, math.MaxInt)
	c := &scopeClient{root: root}
	f.Fuzz(func(t *testing.T, rel string, hasLine bool, line int, hasLimit bool, limit int) {
		req := acp.ReadTextFileRequest{Path: rel}
		if !filepath.IsAbs(rel) {
			req.Path = root + string(filepath.Separator) + rel
		}
		if hasLine {
			req.Line = &line
		}
		if hasLimit {
			req.Limit = &limit
		}
		resp, err := c.ReadTextFile(context.Background(), req)
		if err != nil {
			return
		}
		if strings.Contains(resp.Content, "SECRET") {
			t.Fatalf("served a file outside the root for %q", req.Path)
		}
		lines := strings.SplitAfter(text, "\n")
		start := 0
		if hasLine && line > 1 {
			start = int(min(int64(line)-1, int64(len(lines))))
		}
		n := len(lines) - start
		if hasLimit && limit >= 0 {
			n = int(min(int64(limit), int64(len(lines)-start)))
		}
		if want := strings.Join(lines[start:start+n], ""); (hasLine || hasLimit) && resp.Content != want {
			t.Fatalf("line %d limit %d: served %q, want %q", line, limit, resp.Content, want)
		}
	})
}

// FuzzCapturedRequests reads any bytes as a capture and takes its client
// requests for a replay: it must not panic, and what it returns always
// opens a session before its first prompt and holds at least one prompt.
func FuzzCapturedRequests(f *testing.F) {
	f.Add([]byte(`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}}` + "\n" +
		`{"from":"client","msg":{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}}` + "\n"))
	f.Add([]byte(`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":7}}}` + "\n"))
	f.Add([]byte(`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":"x"}}}` + "\n"))
	f.Add([]byte(queuedCapture))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := capture.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		reqs := CapturedRequests(c)
		if len(reqs) < 2 || reqs[0].Method == acp.AgentMethodSessionPrompt {
			t.Fatalf("no session opened before the first prompt: %+v", reqs)
		}
		prompts := 0
		for _, r := range reqs {
			if r.Method == acp.AgentMethodSessionPrompt {
				prompts++
				if r.Text == "" {
					t.Fatalf("a prompt without text: %+v", r)
				}
				if len(r.Queue) > MaxQueued {
					t.Fatalf("%d prompts queued behind one, more than %d", len(r.Queue), MaxQueued)
				}
				for _, q := range r.Queue {
					if q.Method != acp.AgentMethodSessionPrompt || q.Text == "" || len(q.Queue) > 0 {
						t.Fatalf("a queued request that is no plain prompt: %+v", q)
					}
				}
			} else if len(r.Queue) > 0 {
				t.Fatalf("prompts queued behind a %s: %+v", r.Method, r)
			}
		}
		if prompts == 0 {
			t.Fatalf("no prompt: %+v", reqs)
		}
	})
}
