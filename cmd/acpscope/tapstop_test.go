package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// postStop posts a stop for child of session fake-session to the server
// at u with the given token, from the server's own origin.
func postStop(t *testing.T, u, token, child string) int {
	t.Helper()
	form := url.Values{"token": {token}, "session": {"fake-session"}, "child": {child}}
	req, err := http.NewRequest(http.MethodPost, u+"api/stop", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", strings.TrimSuffix(u, "/"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// tap --web --allow-stop: the page's stop writes session/cancel for a
// child holding the cancel capability into the agent's input (the agent
// gets it), is refused for one without it, and the turn goes on to its
// answer to the editor. Without --allow-stop no stop is served.
func TestTapWebAllowStop(t *testing.T) {
	if code, _, errOut := acpscope(t, "", "tap", "--allow-stop", "--", fakeAgent); code != exitUsage || !strings.Contains(errOut, "--web") {
		t.Fatalf("--allow-stop without --web: exit %d: %s", code, errOut)
	}
	for _, allow := range []bool{true, false} {
		dir := t.TempDir()
		ready, start, cancels := filepath.Join(dir, "ready"), filepath.Join(dir, "go"), filepath.Join(dir, "cancels")
		args := []string{"tap", "--db", filepath.Join(dir, "tap.db"), "--web", "127.0.0.1:0"}
		if allow {
			args = append(args, "--allow-stop")
		}
		args = append(args, "--", fakeAgent, "-mode", "stop", "-ready", ready, "-go", start, "-state", cancels)
		ed, inW, u, done := startTapWeb(t, args)
		ed.request(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}`)
		ed.request(2, "session/new", `{"cwd":"/","mcpServers":[]}`)
		prompted := make(chan struct{})
		go func() {
			defer close(prompted)
			ed.request(3, "session/prompt", `{"sessionId":"fake-session","prompt":[{"type":"text","text":"go"}]}`)
		}()
		waitFile(t, ready)
		// The page exists once the tap's store has the session (before
		// that it is a 404 without a token).
		var page string
		for deadline := time.Now().Add(hangGuard); ; time.Sleep(20 * time.Millisecond) {
			if page = httpGet(t, u+"session?id=fake-session", ""); strings.Contains(page, `"live":true`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the session page never appeared:\n%s", page)
			}
		}
		m := regexp.MustCompile(`"stop_token":"([0-9a-f]+)"`).FindStringSubmatch(page)
		if !allow {
			if m != nil {
				t.Error("without --allow-stop the page carries a stop token")
			}
			if code := postStop(t, u, "", "child-stop"); code == http.StatusAccepted {
				t.Error("without --allow-stop a stop was accepted")
			}
			// The agent waits for a cancel that never comes: the editor
			// sends its own for the child, as it may.
			if err := ed.write(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"child-stop"}}`); err != nil {
				t.Fatal(err)
			}
		} else {
			if m == nil {
				t.Fatal("the session page carries no stop token")
			}
			// The tap learns of the children as the agent announces them.
			deadline := time.Now().Add(hangGuard)
			for postStop(t, u, m[1], "child-keep") != http.StatusConflict {
				if time.Now().After(deadline) {
					t.Fatal("a stop of the child without the capability was never refused with 409")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if code := postStop(t, u, m[1], "child-stop"); code != http.StatusAccepted {
				t.Fatalf("stop child-stop: %d", code)
			}
		}
		if err := os.WriteFile(start, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		<-prompted
		if got, err := os.ReadFile(cancels); err != nil || string(got) != "child-stop\n" {
			t.Errorf("allow %v: the agent got session/cancel for %q (%v), want child-stop once", allow, got, err)
		}
		inW.Close()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("tap exit %d", code)
			}
		case <-time.After(hangGuard):
			t.Fatal("the tap did not end after the editor closed its side")
		}
	}
}
