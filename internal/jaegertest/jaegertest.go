// Package jaegertest starts a real Jaeger (v1.75.0, built by `make jaeger`
// into .tools/) for a test: an OTLP/HTTP receiver and the query API on
// loopback ports of its own, traces in memory, stopped when the test ends.
// Without the binary the test is skipped; under CI=true it fails instead,
// as PostgreSQL's tests do (internal/pgtest). ACPSCOPE_JAEGER names the
// binary; else .tools/jaeger of the repository the test runs in.
// ACPSCOPE_JAEGER_UI names a built jaeger-ui (its build directory, which
// the Go module does not ship), served by the query service as its UI.
package jaegertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Jaeger is a running Jaeger.
type Jaeger struct {
	// OTLP is the OTLP/HTTP receiver's base URL (http://127.0.0.1:PORT),
	// what --otlp and OTEL_EXPORTER_OTLP_ENDPOINT take.
	OTLP string
	// Query is the query service's base URL (its HTTP API and UI).
	Query string
	log   string
}

// Binary is the Jaeger binary the tests use ("" when none is found).
func Binary() string {
	if p := os.Getenv("ACPSCOPE_JAEGER"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	for err == nil {
		if _, serr := os.Stat(filepath.Join(dir, ".tools", "jaeger")); serr == nil {
			return filepath.Join(dir, ".tools", "jaeger")
		}
		if _, serr := os.Stat(filepath.Join(dir, "go.work")); serr == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// config is Jaeger's configuration: OTLP/HTTP in, memory storage, the
// query service, a health check; nothing else listens.
const config = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%[4]d
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%[2]d
    grpc:
      endpoint: 127.0.0.1:%[3]d%[5]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%[1]d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// UIAssets is the built jaeger-ui the query service serves
// (ACPSCOPE_JAEGER_UI; "": none, Jaeger's placeholder page).
func UIAssets() string { return os.Getenv("ACPSCOPE_JAEGER_UI") }

// uiConfig is the query service's ui section for UIAssets ("" without).
func uiConfig() string {
	if UIAssets() == "" {
		return ""
	}
	return "\n    ui:\n      assets_path: " + strconv.Quote(UIAssets())
}

// Start starts a Jaeger for t and waits until its query API answers.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := Binary()
	if _, err := os.Stat(bin); bin == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Jaeger binary under CI=true (make jaeger builds .tools/jaeger; ACPSCOPE_JAEGER=%q)", os.Getenv("ACPSCOPE_JAEGER"))
		}
		t.Skip("no Jaeger binary: run make jaeger (or set ACPSCOPE_JAEGER)")
	}
	dir := t.TempDir()
	otlp, query, grpc, health := freePort(t), freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, otlp, query, grpc, health, uiConfig())), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &Jaeger{OTLP: fmt.Sprintf("http://127.0.0.1:%d", otlp), Query: fmt.Sprintf("http://127.0.0.1:%d", query), log: filepath.Join(dir, "jaeger.log")}
	logf, err := os.Create(j.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("jaeger exited: %v\n%s", err, j.Log())
		default:
		}
		resp, err := http.Get(j.Query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// The receiver listens too once the query service does;
				// make sure.
				if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", otlp)); err == nil {
					c.Close()
					return j
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not answer within 60s\n%s", j.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Log is what Jaeger wrote so far.
func (j *Jaeger) Log() string {
	b, _ := os.ReadFile(j.log)
	return string(b)
}

// Trace is a trace as the query API (api/traces) returns it.
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
}

// Process is a span's process: its service.
type Process struct {
	ServiceName string `json:"serviceName"`
	Tags        []KV   `json:"tags"`
}

// Span is one span of a Trace.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs since the epoch
	Duration  int64 `json:"duration"`  // µs
	Tags      []KV  `json:"tags"`
	Logs      []struct {
		Timestamp int64 `json:"timestamp"`
		Fields    []KV  `json:"fields"`
	} `json:"logs"`
	ProcessID string   `json:"processID"`
	Warnings  []string `json:"warnings"`
}

// KV is a tag or a log field.
type KV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Tag is the span's tag key as text ("" and false when absent).
func (s Span) Tag(key string) (string, bool) {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return fmt.Sprint(kv.Value), true
		}
	}
	return "", false
}

// Parent is the span's CHILD_OF parent ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Service is the span's service name in t.
func (t Trace) Service(s Span) string { return t.Processes[s.ProcessID].ServiceName }

// Of is the spans of one service.
func (t Trace) Of(service string) []Span {
	var out []Span
	for _, s := range t.Spans {
		if t.Service(s) == service {
			out = append(out, s)
		}
	}
	return out
}

// Get reads a trace through the query API; ok is false while Jaeger has
// none by that id.
func (j *Jaeger) Get(ctx context.Context, traceID string) (tr Trace, raw []byte, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.Query+"/api/traces/"+traceID, nil)
	if err != nil {
		return tr, nil, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return tr, nil, false, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return tr, nil, false, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return tr, buf.Bytes(), false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return tr, buf.Bytes(), false, fmt.Errorf("GET api/traces/%s: %s: %s", traceID, resp.Status, strings.TrimSpace(buf.String()))
	}
	var body struct {
		Data []Trace `json:"data"`
	}
	if err := json.Unmarshal(buf.Bytes(), &body); err != nil {
		return tr, buf.Bytes(), false, err
	}
	if len(body.Data) == 0 {
		return tr, buf.Bytes(), false, nil
	}
	return body.Data[0], buf.Bytes(), true, nil
}

// Await reads the trace until it holds at least n spans of service (Jaeger
// stores what it receives a moment later), for at most 60 s.
func (j *Jaeger) Await(t testing.TB, traceID, service string, n int) Trace {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		tr, raw, ok, err := j.Get(context.Background(), traceID)
		if err != nil {
			t.Fatalf("%v\n%s", err, j.Log())
		}
		if ok && len(tr.Of(service)) >= n {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d span(s) of %s after 60s, want %d\n%s\njaeger log:\n%s", traceID, len(tr.Of(service)), service, n, raw, j.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
