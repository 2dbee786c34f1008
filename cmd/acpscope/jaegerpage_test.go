package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/internal/jaegertest"
)

// The README's picture: a two-turn session from acpscope run, opened in
// Jaeger's own UI in headless Chromium. It needs a built jaeger-ui
// (ACPSCOPE_JAEGER_UI, which the Go module does not ship) and runs under
// ACPSCOPE_BROWSER_TESTS=1; ACPSCOPE_TRACE_SCREENSHOT=FILE keeps the
// picture (docs/contributing.md#the-trace-screenshot).
func TestJaegerTraceScreenshot(t *testing.T) {
	webtest.Chromium(t)
	if jaegertest.UIAssets() == "" {
		t.Skip("no jaeger-ui build: set ACPSCOPE_JAEGER_UI (docs/contributing.md#the-trace-screenshot)")
	}
	j := jaegertest.Start(t)
	dir := t.TempDir()
	const session = "sess-2f6c"
	code, _, errOut, _ := acpscopeEnv(t, nil, "run", "--no-db", "--plain", "--permission", "allow", "--prompt", "one", "--prompt", "two",
		"--otlp", j.OTLP, "--", fakeAgent, "-mode", "traced", "-state", filepath.Join(dir, "tp"), "-sid", session)
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	tid := traces.TraceIDOf(session).String()
	j.Await(t, tid, "acpscope", 8)
	page := j.Query + "/trace/" + tid
	// Jaeger's UI draws the trace's spans, every one expanded: the
	// subagent and its child tool call are on the page.
	dom := webtest.DumpDOM(t, page, "--window-size=1400,520", "--virtual-time-budget=5000")
	for _, want := range []string{"invoke_agent reviewer", "execute_tool Read file1.go", "invoke_agent tester", "execute_tool Read file2.go"} {
		if !strings.Contains(dom, want) {
			t.Errorf("Jaeger's trace page lacks %q", want)
		}
	}
	png := filepath.Join(dir, "trace.png")
	webtest.Run(t, "--window-size=1400,520", "--hide-scrollbars", "--virtual-time-budget=5000", "--screenshot="+png, page)
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10_000 {
		t.Fatalf("screenshot: %d bytes, %v", len(b), err)
	}
	if out := os.Getenv("ACPSCOPE_TRACE_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
