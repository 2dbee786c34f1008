package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
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
