package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
)

// otelFlags are the trace export's flags (run, replay, tap, export).
type otelFlags struct {
	endpoint string
	content  bool
	// noTraceparent (run) keeps the turn's traceparent out of the
	// prompts' _meta.
	noTraceparent bool
}

// register adds the flags; withTraceparent adds run's
// --no-traceparent.
func (f *otelFlags) register(fs *flag.FlagSet, withTraceparent bool) {
	fs.StringVar(&f.endpoint, "otlp", "", "export the sessions as OpenTelemetry traces (OTLP/HTTP) to this collector base URL, e.g. http://127.0.0.1:4318 (default: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; neither: no export)")
	fs.BoolVar(&f.content, "otlp-content", false, "with the export: record prompt and answer text in the spans (gen_ai.input.messages, gen_ai.output.messages); off by default")
	if withTraceparent {
		fs.BoolVar(&f.noTraceparent, "no-traceparent", false, "with the export: do not put the turn's W3C traceparent into the _meta of each session/prompt")
	}
}

// open returns the exporter the flags and the OTEL_* environment ask for,
// nil when they ask for none.
func (f *otelFlags) open(ctx context.Context) (*traces.Exporter, error) {
	x, err := traces.New(ctx, traces.Options{Endpoint: f.endpoint, CaptureContent: f.content}, version)
	if err != nil {
		return nil, fmt.Errorf("trace export: %w", err)
	}
	return x, nil
}

// closeTraces ends the export (at most traces.ShutdownWait) and writes
// its closing report line to w; nothing without an export.
func closeTraces(x *traces.Exporter, w io.Writer) traces.Report {
	if x == nil {
		return traces.Report{}
	}
	r := x.Close()
	fmt.Fprintf(w, "acpscope: %s\n", r)
	return r
}

// cmdExport implements `acpscope export [--db DSN] --session ID [--otlp
// URL]`: a stored session and its child sessions as a trace, with the
// ids its run or replay gave (a second export sends the same spans again).
func cmdExport(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("export", e.stderr)
	var of otelFlags
	of.register(fs, false)
	sessionID := fs.String("session", "", "the stored session to export (required)")
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sessionID == "" || fs.NArg() > 0 {
		return fmt.Errorf("export needs --session ID and no other arguments")
	}
	x, err := of.open(ctx)
	if err != nil {
		return err
	}
	if x == nil {
		return fmt.Errorf("export needs a collector: --otlp URL, or OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	}
	s, err := openStoreReadOnly(ctx, *dsn)
	if err != nil {
		x.Close()
		return err
	}
	defer s.Close()
	spans, err := x.ExportStored(ctx, s, *sessionID, web.AgentOf)
	r := closeTraces(x, e.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "exported session %s: %d span(s)\n", *sessionID, spans)
	if r.Dropped > 0 {
		return fmt.Errorf("%w: trace export incomplete: %d of %d span(s) not exported", session.ErrTurn, r.Dropped, spans)
	}
	return nil
}
