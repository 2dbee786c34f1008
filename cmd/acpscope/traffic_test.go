package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// webURL waits for the address a --web server announced on out.
func webURL(t *testing.T, out *lockedBuffer, name string) string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(name) + `: (http://[^ ]+/) `)
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindSubmatch(out.Bytes()); m != nil {
			return string(m[1])
		}
	}
	t.Fatalf("%s announced no address:\n%s", name, out.Bytes())
	return ""
}

// trafficMethods is what /api/traffic shows: each message's direction,
// kind and method.
func trafficMethods(t *testing.T, base string) []string {
	t.Helper()
	r, err := http.Get(base + "api/traffic")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var a struct {
		Frames []struct{ From, Kind, Method, Session string }
	}
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range a.Frames {
		out = append(out, f.From+" "+f.Kind+" "+f.Method+" "+f.Session)
	}
	return out
}

// While run --web runs a turn, its pages show the connection's messages
// so far, both directions, each answer with its request's method.
func TestRunWebServesItsTraffic(t *testing.T) {
	dir := t.TempDir()
	ready, start := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"run", "--plain", "--db", filepath.Join(dir, "run.db"), "--prompt", "burst", "--cwd", dir,
			"--web", "127.0.0.1:0", "--", fakeAgent, "-mode", "burst", "-updates", "10", "-per", "5", "-ready", ready, "-go", start},
			strings.NewReader(""), &lockedBuffer{}, &stderr)
	}()
	base := webURL(t, &stderr, "acpscope run --web")
	waitFile(t, ready)
	got := strings.Join(trafficMethods(t, base), "\n")
	for _, want := range []string{"client request initialize ", "agent response initialize ", "client request session/new ",
		"agent response session/new fake-session", "client request session/prompt fake-session"} {
		if !strings.Contains(got, want+"\n") && !strings.HasSuffix(got, want) {
			t.Errorf("the traffic lacks %q:\n%s", want, got)
		}
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != exitOK {
		t.Fatalf("run exit %d: %s", code, stderr.Bytes())
	}
}

// --web needs the store it serves, and a capture that cannot be read is a
// usage error.
func TestTrafficFlagErrors(t *testing.T) {
	if code, _, errOut := acpscope(t, "", "run", "--no-db", "--web", "127.0.0.1:0", "--prompt", "x", "--", fakeAgent); code != exitUsage || !strings.Contains(errOut, "--no-db") {
		t.Errorf("run --web --no-db: exit %d: %s", code, errOut)
	}
	if code, _, errOut := acpscope(t, "", "web", "--capture", filepath.Join(t.TempDir(), "missing.jsonl")); code != exitUsage || !strings.Contains(errOut, "--capture") {
		t.Errorf("web --capture of a missing file: exit %d: %s", code, errOut)
	}
}

// checkTapTraffic checks a live tap's traffic view (TestTapWebServesTheStoreLive,
// once the turn's card is stored): the editor's prompt and the agent's
// tool call are there, and the tool call's message links to its card.
func checkTapTraffic(t *testing.T, base string) {
	t.Helper()
	got := strings.Join(trafficMethods(t, base), "\n")
	for _, want := range []string{"client request session/prompt fake-session", "agent notification session/update fake-session"} {
		if !strings.Contains(got, want) {
			t.Errorf("the tap's traffic lacks %q:\n%s", want, got)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := client.Get(base + "traffic/card?session=fake-session&call=toolu_A")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if loc := r.Header.Get("Location"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/session?id=fake-session&offset=") {
		t.Errorf("the tool call's card link: %d %q", r.StatusCode, loc)
	}
}
