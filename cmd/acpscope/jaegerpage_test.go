package main

import (
	"bytes"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web/webtest"
	"github.com/kdlbs/acp-go-sdk/internal/jaegertest"
)

// traceRow is one span of the trace page: depth in the tree, its bar's
// offset and width in percent of the trace, and its key attributes.
type traceRow struct {
	Depth           int
	Name, Service   string
	Left, Width     float64
	Millis          float64
	Attrs           string
	Failed, Tool    bool
	SpanID, Parent  string
	PermissionCount int
}

// tracePage draws a trace from Jaeger's query API as a timeline (depth
// first, children by start time): what docs/otel-trace.png shows.
var tracePage = template.Must(template.New("trace").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>trace {{.ID}}</title><style>
body{font:13px/1.35 system-ui,sans-serif;margin:16px;color:#1d2330}
h1{font-size:16px;margin:0 0 2px} .sub{color:#5a6275;margin-bottom:12px}
.row{display:grid;grid-template-columns:430px 1fr;align-items:center;border-top:1px solid #e7e9ef;min-height:34px}
.name{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.name b{font-weight:600} .svc{color:#7a8194;font-size:11px}
.attrs{color:#5a6275;font-size:11px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.lane{position:relative;height:16px;background:#f5f6f9}
.bar{position:absolute;top:2px;height:12px;border-radius:2px;background:#4a7bd0;min-width:2px}
.bar.tool{background:#3aa37a} .bar.failed{background:#d0493f}
.ms{position:absolute;top:0;font-size:10px;color:#333;padding-left:4px;white-space:nowrap}
</style></head><body>
<h1>Trace {{.ID}}</h1>
<div class="sub">{{len .Rows}} spans from Jaeger v1.75.0's query API (api/traces), service {{.Service}} — session {{.Session}}</div>
{{range .Rows}}<div class="row"><div class="name" style="padding-left:{{.Depth}}em">
<b>{{.Name}}</b> <span class="svc">{{.SpanID}}</span><div class="attrs" style="padding-left:0">{{.Attrs}}</div></div>
<div class="lane"><div class="bar{{if .Tool}} tool{{end}}{{if .Failed}} failed{{end}}" style="left:{{printf "%.2f" .Left}}%;width:{{printf "%.2f" .Width}}%"></div>
<span class="ms" style="left:{{printf "%.2f" .Left}}%">{{printf "%.0f" .Millis}} ms{{if .PermissionCount}} · {{.PermissionCount}} permission events{{end}}</span></div></div>
{{end}}</body></html>`))

// renderTrace lays out tr's spans of service for tracePage.
func renderTrace(tr jaegertest.Trace, service, session string) []byte {
	spans := tr.Of(service)
	byParent := map[string][]jaegertest.Span{}
	ids := map[string]bool{}
	var first, last int64
	for i, s := range spans {
		ids[s.SpanID] = true
		if i == 0 || s.StartTime < first {
			first = s.StartTime
		}
		if end := s.StartTime + s.Duration; end > last {
			last = end
		}
	}
	for _, s := range spans {
		p := s.Parent()
		if !ids[p] {
			p = ""
		}
		byParent[p] = append(byParent[p], s)
	}
	total := float64(max(last-first, 1))
	var rows []traceRow
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		kids := byParent[parent]
		slices.SortFunc(kids, func(a, b jaegertest.Span) int {
			if a.StartTime != b.StartTime {
				return int(a.StartTime - b.StartTime)
			}
			return strings.Compare(a.OperationName, b.OperationName)
		})
		for _, s := range kids {
			var attrs []string
			for _, k := range []string{"gen_ai.conversation.id", "gen_ai.tool.call.id", "gen_ai.agent.id", "gen_ai.request.model", "acp.tool_call.kind", "acp.stop_reason", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "otel.status_description"} {
				if v, ok := s.Tag(k); ok {
					attrs = append(attrs, k+"="+v)
				}
			}
			failed := false
			if v, _ := s.Tag("otel.status_code"); v == "ERROR" {
				failed = true
			}
			rows = append(rows, traceRow{Depth: depth, Name: s.OperationName, Service: service, SpanID: s.SpanID,
				Left: float64(s.StartTime-first) / total * 100, Width: max(float64(s.Duration)/total*100, 0.2), Millis: float64(s.Duration) / 1000,
				Attrs: strings.Join(attrs, "  "), Failed: failed, Tool: strings.HasPrefix(s.OperationName, "execute_tool"), PermissionCount: len(s.Logs)})
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	var b bytes.Buffer
	if err := tracePage.Execute(&b, map[string]any{"ID": tr.TraceID, "Rows": rows, "Service": service, "Session": session}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// The README's picture: a two-turn session from acpscope run, read back
// from Jaeger and drawn in headless Chromium (under
// ACPSCOPE_BROWSER_TESTS=1; ACPSCOPE_TRACE_SCREENSHOT=FILE keeps it).
func TestJaegerTraceScreenshot(t *testing.T) {
	webtest.Chromium(t)
	j := jaegertest.Start(t)
	dir := t.TempDir()
	const session = "sess-2f6c"
	code, _, errOut, _ := acpscopeEnv(t, nil, "run", "--no-db", "--plain", "--permission", "allow", "--prompt", "one", "--prompt", "two",
		"--otlp", j.OTLP, "--", fakeAgent, "-mode", "traced", "-state", filepath.Join(dir, "tp"), "-sid", session)
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	tr := j.Await(t, traces.TraceIDOf(session).String(), "acpscope", 8)
	page := renderTrace(tr, "acpscope", session)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	png := filepath.Join(dir, "trace.png")
	webtest.Run(t, "--window-size=1280,440", "--hide-scrollbars", "--virtual-time-budget=1000", "--screenshot="+png, srv.URL)
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10_000 {
		t.Fatalf("screenshot: %d bytes, %v", len(b), err)
	}
	if out := os.Getenv("ACPSCOPE_TRACE_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Contains(page, []byte("invoke_agent reviewer")) {
		t.Errorf("page lacks the subagent:\n%s", page)
	}
}
