package tap

import (
	"bytes"
	"context"
	"io"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// FuzzObserverTraces feeds fuzzed wire lines, editor's and agent's, to an
// observer that exports traces: whatever the peers send (a traceparent of
// any shape, prompts answered or not, permission requests), observing
// never panics and the export closes.
func FuzzObserverTraces(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}],"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`),
		[]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Task","kind":"think"}}}`+"\n"+
			`{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}}`+"\n"+
			`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","_meta":{"traceparent":7}}}`+"\n"+`{"id":9,"result":{"outcome":{"outcome":"selected","optionId":"x"}}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}`))
	f.Fuzz(func(t *testing.T, editor, agent []byte) {
		x, err := traces.New(context.Background(), traces.Options{Exporter: tracetest.NewInMemoryExporter(), Getenv: func(string) string { return "" }}, "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		obs, err := NewObserver(ObserverConfig{View: view.NewTerminal(io.Discard, false), Sink: x, Traces: x})
		if err != nil {
			t.Fatal(err)
		}
		el, al := bytes.Split(editor, []byte("\n")), bytes.Split(agent, []byte("\n"))
		for i := 0; i < max(len(el), len(al)); i++ {
			if i < len(el) {
				obs.Observe(capture.FromClient, el[i])
			}
			if i < len(al) {
				obs.Observe(capture.FromAgent, al[i])
			}
		}
		obs.Finish()
		x.Close()
	})
}
