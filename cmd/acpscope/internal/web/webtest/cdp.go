package webtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Browser is one headless Chromium driven over the DevTools protocol on
// a pipe (--remote-debugging-pipe: no port is opened), for the tests
// that click and measure: a page is opened at a given viewport and
// zoom, and expressions are evaluated in it.
type Browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	in      *os.File // the browser's fd 3: what it reads
	out     *bufio.Reader
	outFile *os.File
	next    int
	session string // the attached page's DevTools session
	target  string
}

// OpenBrowser starts a headless Chromium (skipping the test as Chromium
// does without ACPSCOPE_BROWSER_TESTS=1); it is stopped at the test's end.
func OpenBrowser(t testing.TB) *Browser {
	t.Helper()
	bin := Chromium(t)
	slots <- struct{}{}
	toBrowser, browserIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	browserOut, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		<-slots
		t.Fatal(err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	b := &Browser{t: t, cmd: cmd, in: browserIn, out: bufio.NewReader(browserOut), outFile: browserOut}
	t.Cleanup(func() {
		b.in.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		b.outFile.Close()
		<-slots
	})
	return b
}

// call sends one DevTools command (to the page's session when attached
// is true) and returns its result; events in between are skipped.
func (b *Browser) call(method string, params any, attached bool) json.RawMessage {
	b.t.Helper()
	b.next++
	msg := map[string]any{"id": b.next, "method": method, "params": params}
	if attached {
		msg["sessionId"] = b.session
	}
	line, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.in.Write(append(line, 0)); err != nil {
		b.t.Fatalf("devtools %s: %v", method, err)
	}
	for {
		raw, err := b.out.ReadBytes(0)
		if err != nil {
			b.t.Fatalf("devtools %s: %v", method, err)
		}
		var answer struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw[:len(raw)-1], &answer); err != nil {
			b.t.Fatalf("devtools %s: %v", method, err)
		}
		if answer.ID != b.next {
			continue // an event
		}
		if answer.Error != nil {
			b.t.Fatalf("devtools %s: %s", method, answer.Error.Message)
		}
		return answer.Result
	}
}

// Open loads u in a new page of width×height CSS pixels at the device
// scale factor scale, and waits until its script finished its first
// render (the self-check). A page opened before is closed.
func (b *Browser) Open(u string, width, height int, scale float64) {
	b.t.Helper()
	if b.target != "" {
		b.call("Target.closeTarget", map[string]any{"targetId": b.target}, false)
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(b.call("Target.createTarget", map[string]any{"url": "about:blank"}, false), &created)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(b.call("Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, false), &att)
	b.target, b.session = created.TargetID, att.SessionID
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height,
		"deviceScaleFactor": scale, "mobile": false}, true)
	b.call("Page.navigate", map[string]any{"url": u}, true)
	b.WaitFor(`document.readyState === "complete" && document.body && document.body.dataset.selfcheck === "done"`)
}

// Eval evaluates expr in the page (a promise is awaited) and decodes its
// value into out (when not nil).
func (b *Browser) Eval(expr string, out any) {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	raw := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, true)
	if err := json.Unmarshal(raw, &r); err != nil {
		b.t.Fatal(err)
	}
	if r.Exception != nil {
		b.t.Fatalf("evaluating %s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, out); err != nil {
			b.t.Fatalf("evaluating %s: %v (%s)", expr, err, r.Result.Value)
		}
	}
}

// WaitFor evaluates the boolean expr until it holds (polling every 50
// ms); the test fails if it does not within a minute, a bound for a
// broken page, not a measure of speed.
func (b *Browser) WaitFor(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var ok bool
		b.Eval("!!("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var dump string
			b.Eval("document.documentElement.outerHTML.slice(0, 3000)", &dump)
			b.t.Fatalf("the page never reached %s:\n%s", expr, dump)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// String names the page's session (for messages).
func (b *Browser) String() string { return fmt.Sprintf("page %s", b.target) }
