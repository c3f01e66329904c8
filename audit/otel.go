//go:build mcpfn_otel

package audit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// OTelBuilt reports whether this binary links the OpenTelemetry emitter:
// true in builds with the tag mcpfn_otel, which this file needs.
const OTelBuilt = true

// OTelConfig configures an [OTelEmitter].
type OTelConfig struct {
	// Endpoint is the OTLP/HTTP base URL ("http://127.0.0.1:4318"); spans
	// go to Endpoint + "/v1/traces". TracesEndpoint, when set, is the full
	// URL instead. Both empty: the exporter reads the OTEL_EXPORTER_OTLP_*
	// variables itself (default http://localhost:4318, where a collector
	// extension listens on Lambda).
	Endpoint, TracesEndpoint string
	// Service is the resource's service.name (OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override it).
	Service string
	// Timeout bounds one export (default 2 s).
	Timeout time.Duration
	// SigV4Region, when set, signs every export for X-Ray in that region
	// (X-Ray's OTLP endpoint takes nothing else), with SigV4Credentials
	// (nil: the default AWS configuration's, the function's role). An
	// endpoint on xray.<region>.amazonaws.com sets it by itself.
	SigV4Region      string
	SigV4Credentials aws.CredentialsProvider
}

// OTelEmitter exports spans over OTLP/HTTP with the OpenTelemetry SDK. A
// span keeps the ids the audit row settled: the SDK's id generator is
// handed them through the context (fixedIDs), and only ids of spans mcpfn
// did not settle come from the X-Ray id generator (xrayIDs), so every id
// the emitter exports is also a valid X-Ray id. Spans are batched; [OTelEmitter.FlushSpans]
// exports them, and the auditor and the gateway call it before answering.
type OTelEmitter struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// NewOTelEmitter returns an emitter exporting to cfg's endpoint. Nothing is
// sent until the first flush.
func NewOTelEmitter(ctx context.Context, cfg OTelConfig) (*OTelEmitter, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(cfg.Timeout)}
	switch {
	case cfg.TracesEndpoint != "":
		opts = append(opts, otlptracehttp.WithEndpointURL(cfg.TracesEndpoint))
	case cfg.Endpoint != "":
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(cfg.Endpoint, "/")+"/v1/traces"))
	}
	region := cfg.SigV4Region
	if region == "" {
		// Where the exporter will send: the first endpoint set.
		for _, ep := range []string{cfg.TracesEndpoint, cfg.Endpoint, os.Getenv(EnvOTLPTracesEndpoint), os.Getenv(EnvOTLPEndpoint)} {
			if ep != "" {
				region = sigv4RegionOf(ep)
				break
			}
		}
	}
	if region != "" {
		client, err := newSigV4Client(ctx, region, cfg.SigV4Credentials)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithHTTPClient(client))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("audit: otlp exporter: %w", err)
	}
	service := cfg.Service
	if service == "" {
		service = "mcpfn"
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service), attribute.String("cloud.provider", "aws")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("audit: otel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// The sampling decision was the caller's (Row.Sampled) and has
		// been applied: what reaches the emitter is recorded.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithIDGenerator(fixedIDs{next: xrayIDs{}}),
	)
	return &OTelEmitter{tp: tp, tracer: tp.Tracer("github.com/mcpfn/mcpfn/audit")}, nil
}

// EmitSpan records s: its trace id in W3C form, its span id as is, its
// parent (when it has one) as a remote parent read from the X-Ray header
// naming it (spanContextFromXRay). A span whose ids are not X-Ray ids is dropped, as the X-Ray
// daemon drops it.
func (e *OTelEmitter) EmitSpan(s Span) {
	tid := W3CTraceID(s.TraceID)
	if tid == "" || len(s.ID) != 16 || !isLowerHex(s.ID) {
		return
	}
	ctx := context.Background()
	if s.ParentID != "" {
		parent, ok := spanContextFromXRay("Root=" + s.TraceID + ";Parent=" + s.ParentID + ";Sampled=1")
		if !ok {
			return
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	traceID, _ := trace.TraceIDFromHex(tid)
	spanID, _ := trace.SpanIDFromHex(s.ID)
	ctx = context.WithValue(ctx, fixedIDsKey{}, ids{traceID, spanID})

	attrs := make([]attribute.KeyValue, 0, len(s.Attributes))
	for k, v := range s.Attributes {
		attrs = append(attrs, attribute.String(k, v))
	}
	opts := []trace.SpanStartOption{
		trace.WithTimestamp(s.Start),
		trace.WithSpanKind(otelKind(s.Kind)),
		trace.WithAttributes(attrs...),
	}
	if tp, ok := ParseTraceparent(s.Link); ok && s.Link != "" {
		t, _ := trace.TraceIDFromHex(tp.TraceID)
		p, _ := trace.SpanIDFromHex(tp.ParentID)
		flags := trace.TraceFlags(0)
		if tp.Sampled {
			flags = trace.FlagsSampled
		}
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: t, SpanID: p, TraceFlags: flags, Remote: true,
		})}))
	}
	_, span := e.tracer.Start(ctx, otelName(s), opts...)
	if s.Error || s.Fault || s.Throttle {
		span.SetStatus(codes.Error, s.Attributes["error.type"])
	}
	span.End(trace.WithTimestamp(s.End))
}

// FlushSpans exports every span emitted so far, within ctx.
func (e *OTelEmitter) FlushSpans(ctx context.Context) error {
	return e.tp.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter.
func (e *OTelEmitter) Shutdown(ctx context.Context) error {
	return e.tp.Shutdown(ctx)
}

// otelName follows the MCP conventions: "{mcp.method.name} {target}".
func otelName(s Span) string {
	m, t := s.Attributes["mcp.method.name"], s.Attributes["gen_ai.tool.name"]
	switch {
	case m != "" && t != "":
		return m + " " + t
	case m != "":
		return m
	}
	return s.Name
}

func otelKind(k SpanKind) trace.SpanKind {
	switch k {
	case SpanServer:
		return trace.SpanKindServer
	case SpanClient:
		return trace.SpanKindClient
	}
	return trace.SpanKindInternal
}

type fixedIDsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// fixedIDs is the SDK's id generator: the ids in the context when the
// emitter put them there, else next's (xrayIDs).
type fixedIDs struct{ next sdktrace.IDGenerator }

func (g fixedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if v, ok := ctx.Value(fixedIDsKey{}).(ids); ok {
		return v.trace, v.span
	}
	return g.next.NewIDs(ctx)
}

func (g fixedIDs) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	if v, ok := ctx.Value(fixedIDsKey{}).(ids); ok && v.trace == traceID {
		return v.span
	}
	return g.next.NewSpanID(ctx, traceID)
}
