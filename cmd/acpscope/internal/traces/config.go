package traces

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// SemconvVersion is the version of the OpenTelemetry semantic conventions
// the spans follow (the GenAI conventions' status there: development).
const SemconvVersion = "1.40.0"

// SchemaURL is SemconvVersion's schema URL, set on every span's scope.
const SchemaURL = semconv.SchemaURL

// OptInLatest is the OTEL_SEMCONV_STABILITY_OPT_IN value of the GenAI
// conventions that asks for their newest experimental names.
const OptInLatest = "gen_ai_latest_experimental"

// ShutdownWait bounds Close: queued spans are sent for at most this long,
// then what is left is dropped (counted).
const ShutdownWait = 2 * time.Second

// DefaultServiceName is service.name without OTEL_SERVICE_NAME (or a
// service.name in OTEL_RESOURCE_ATTRIBUTES).
const DefaultServiceName = "acpscope"

// Options configure an Exporter.
type Options struct {
	// Endpoint is --otlp: the collector's base URL, as
	// OTEL_EXPORTER_OTLP_ENDPOINT (/v1/traces is added when it has no
	// path); "" takes the OTEL_* environment.
	Endpoint string
	// CaptureContent records prompt and answer text (the turn's, a
	// subagent's) as gen_ai.input.messages and gen_ai.output.messages.
	// Off by default, as the conventions advise.
	CaptureContent bool
	// Exporter replaces the OTLP exporter (tests).
	Exporter sdktrace.SpanExporter
	// Getenv reads the environment; nil is os.Getenv.
	Getenv func(string) string
}

func (o Options) getenv(k string) string {
	if o.Getenv != nil {
		return o.Getenv(k)
	}
	return os.Getenv(k)
}

// Enabled reports whether o asks for an export: an --otlp endpoint, or
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, unless
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
func (o Options) Enabled() bool {
	if o.Exporter != nil {
		return true
	}
	if strings.EqualFold(o.getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(o.getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return o.Endpoint != "" || o.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || o.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// LatestExperimental reports whether OTEL_SEMCONV_STABILITY_OPT_IN (a
// comma-separated list) holds OptInLatest. acpscope's first GenAI output
// is SemconvVersion, so there is no older set to stay on: the value is
// recorded on every span's scope (acpscope.semconv.opt_in) and, when the
// pinned version moves on, the newer names go behind it while
// SemconvVersion stays the default.
func (o Options) LatestExperimental() bool {
	for _, v := range strings.Split(o.getenv("OTEL_SEMCONV_STABILITY_OPT_IN"), ",") {
		if strings.TrimSpace(v) == OptInLatest {
			return true
		}
	}
	return false
}

// traceEndpoint turns a base URL (--otlp) into the traces URL: the
// signal path is added when the URL has none, as the specification does
// for OTEL_EXPORTER_OTLP_ENDPOINT.
func traceEndpoint(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--otlp %q: want an http:// or https:// URL", base)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// batchSettings are the OTEL_BSP_* values with the specification's
// defaults; a value that does not parse keeps its default.
type batchSettings struct {
	delay, timeout time.Duration
	queue, batch   int
}

func (o Options) batchSettings() batchSettings {
	b := batchSettings{delay: 5 * time.Second, timeout: 30 * time.Second, queue: 2048, batch: 512}
	ms := func(k string, d *time.Duration) {
		if n, err := strconv.Atoi(o.getenv(k)); err == nil && n >= 0 {
			*d = time.Duration(n) * time.Millisecond
		}
	}
	count := func(k string, d *int) {
		if n, err := strconv.Atoi(o.getenv(k)); err == nil && n > 0 {
			*d = n
		}
	}
	ms("OTEL_BSP_SCHEDULE_DELAY", &b.delay)
	ms("OTEL_BSP_EXPORT_TIMEOUT", &b.timeout)
	count("OTEL_BSP_MAX_QUEUE_SIZE", &b.queue)
	count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &b.batch)
	b.batch = min(b.batch, b.queue)
	return b
}

// newProvider builds the tracer provider: the OTLP/HTTP exporter (its
// endpoint, headers, timeout and TLS from the OTEL_EXPORTER_OTLP_*
// environment, or --otlp), the sampler (OTEL_TRACES_SAMPLER, by default
// parent-based always-on), the resource (service.name acpscope unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise), derived
// ids, and the bounded queue.
func newProvider(ctx context.Context, o Options) (*sdktrace.TracerProvider, *queue, error) {
	exp := o.Exporter
	if exp == nil {
		if p := o.getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p == "" {
			if p = o.getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
				return nil, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: acpscope sends OTLP over http/protobuf only", p)
			}
		} else if p != "http/protobuf" {
			return nil, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%s: acpscope sends OTLP over http/protobuf only", p)
		}
		var opts []otlptracehttp.Option
		if o.Endpoint != "" {
			u, err := traceEndpoint(o.Endpoint)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		}
		var err error
		if exp, err = otlptracehttp.New(ctx, opts...); err != nil {
			return nil, nil, fmt.Errorf("otlp: %w", err)
		}
	}
	res, err := resource.Merge(
		resource.NewWithAttributes(SchemaURL, semconv.ServiceName(DefaultServiceName)),
		resource.Environment(),
	)
	if err != nil {
		// A conflicting schema URL in the environment: keep its attributes.
		res = resource.Environment()
	}
	q := newQueue(exp, o.batchSettings())
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithSpanProcessor(q),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit: maxAttributeBytes, AttributeCountLimit: 128,
			EventCountLimit: maxSpanEvents, LinkCountLimit: 8, AttributePerEventCountLimit: 16, AttributePerLinkCountLimit: 8,
		}),
	)
	return tp, q, nil
}

// Bounds of one span: agent text is cut at maxAttributeBytes, and at
// most maxSpanEvents permission events are kept (the rest counted by the
// SDK as dropped events on the span).
const (
	maxAttributeBytes = 8 << 10
	maxSpanEvents     = 128
)

// tracerOf is the tracer of acpscope's spans.
func tracerOf(tp *sdktrace.TracerProvider, version string, latest bool) trace.Tracer {
	optIn := "default"
	if latest {
		optIn = OptInLatest
	}
	return tp.Tracer("github.com/kdlbs/acp-go-sdk/cmd/acpscope",
		trace.WithInstrumentationVersion(version), trace.WithSchemaURL(SchemaURL),
		trace.WithInstrumentationAttributes(attrOptIn.String(optIn)))
}
