package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// startWeb runs `acpscope web` with args until the test ends and returns
// the URL it printed.
func startWeb(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		code := run(ctx, append([]string{"web"}, args...), strings.NewReader(""), pw, &errOut)
		pw.Close()
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("web exit %d: %s", code, errOut.String())
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	if err != nil {
		t.Fatalf("no address printed: %v", err)
	}
	if !strings.Contains(line, "loopback only") || !strings.Contains(line, "read-only") {
		t.Errorf("the banner does not say loopback only and read-only: %q", line)
	}
	u := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	if u == "" {
		t.Fatalf("no loopback URL in %q", line)
	}
	return u
}

func TestWebServesTheReplayedDemo(t *testing.T) {
	db := replayDemo(t)
	u := startWeb(t, "--db", db, "--addr", "127.0.0.1:0")
	for path, want := range map[string]string{
		"":                          `data-page="sessions"`,
		"session?id=cur-7f3a":       `<code id="session-id">cur-7f3a</code>`,
		"api/sessions?agent=claude": `"id":"cl-91b0"`,
		"api/session?id=cl-91b0":    `"tool_call_id":"toolu_C"`,
	} {
		res, err := http.Get(u + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("/%s: %d, lacks %q", path, res.StatusCode, want)
		}
		if res.Header.Get("Content-Security-Policy") == "" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("/%s: security headers missing", path)
		}
	}
}

func TestWebUsage(t *testing.T) {
	for _, args := range [][]string{{"web", "extra"}, {"web", "--poll", "1ms"}, {"web", "--addr", "no-port", "--db", replayDemo(t)}} {
		if code, _, _ := acpscope(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// A subagent session (ACP child session) shows as a card of its parent
// session that names the child, and the child is part of the family the
// session page follows.
func TestWebSubagentSessionFamily(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sub.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--subagents", "--db", db,
		filepath.Join("testdata", "subagent_session.jsonl")); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	s, err := persistence.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, ok, err := web.LoadSession(context.Background(), s, "s1")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if len(v.Family) != 2 || v.Family[1] != "child1" || len(v.Cards) != 1 || v.Cards[0].ChildSessionID != "child1" ||
		v.Session.Agent != "claude" || len(v.Session.ChildSessions) != 1 {
		t.Fatalf("view: %+v", v)
	}
}

// With a wildcard --addr the Host check still runs: loopback names, the
// bound address and --allow-host names pass, a rebinding name does not,
// and the printed URL is one a browser opens (never http://[::]:PORT/).
func TestWebWildcardAddrKeepsTheHostCheck(t *testing.T) {
	db := replayDemo(t)
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		done := make(chan int, 1)
		go func() {
			code := run(ctx, []string{"web", "--db", db, "--addr", addr, "--allow-host", "box.lan"}, strings.NewReader(""), pw, io.Discard)
			pw.Close()
			done <- code
		}()
		line, err := bufio.NewReader(pr).ReadString('\n')
		go io.Copy(io.Discard, pr)
		if err != nil {
			t.Fatal(err)
		}
		u := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
		if u == "" || strings.Contains(line, "[::]") || strings.Contains(line, "0.0.0.0") {
			t.Errorf("%s: the printed URL is not one a browser opens: %q", addr, line)
		}
		port := strings.TrimSuffix(u[strings.LastIndex(u, ":")+1:], "/")
		for host, want := range map[string]int{
			"127.0.0.1:" + port: http.StatusOK, "localhost:" + port: http.StatusOK, "box.lan:" + port: http.StatusOK,
			"rebind.evil.example:" + port: http.StatusMisdirectedRequest,
		} {
			req, _ := http.NewRequest(http.MethodGet, u+"api/changes", nil)
			req.Host = host
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("%s, Host %s: %d, want %d", addr, host, res.StatusCode, want)
			}
		}
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("web exit %d", code)
		}
	}
	if code, _, _ := acpscope(t, "", "web", "--db", db, "--allow-host", "http://box.lan/"); code != exitUsage {
		t.Errorf("--allow-host with a URL: exit %d, want 2", code)
	}
}
