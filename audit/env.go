package audit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Environment variables read by [NewFromEnv].
const (
	EnvTable           = "MCPFN_AUDIT_TABLE"
	EnvEntityDimension = "MCPFN_AUDIT_ENTITY_DIMENSION"
	EnvRetentionDays   = "MCPFN_AUDIT_RETENTION_DAYS"
	EnvXRayDaemon      = "AWS_XRAY_DAEMON_ADDRESS"
	// EnvTracing chooses the span emitters: xray (default), otel, both or
	// none (docs/tracing.md).
	EnvTracing = "MCPFN_TRACING"
	// The OTLP exporter's endpoints (OpenTelemetry's own variables).
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Tracing modes of MCPFN_TRACING.
const (
	TracingXRay = "xray"
	TracingOTel = "otel"
	TracingBoth = "both"
	TracingNone = "none"
)

// TracingFrom returns the span emitter MCPFN_TRACING chooses, or nil:
//
//   - xray (or unset): the X-Ray daemon emitter when AWS_XRAY_DAEMON_ADDRESS
//     is set (Lambda with active tracing), else none — today's behaviour;
//   - otel: the OpenTelemetry emitter, exporting OTLP/HTTP to
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
//     (default http://localhost:4318);
//   - both: each span to both, with the same ids;
//   - none: no spans.
//
// service names the OTel resource when AWS_LAMBDA_FUNCTION_NAME is unset.
func TracingFrom(ctx context.Context, getenv func(string) string, service string) (SpanEmitter, error) {
	mode := strings.ToLower(strings.TrimSpace(getenv(EnvTracing)))
	var xr, ot SpanEmitter
	if mode == "" || mode == TracingXRay || mode == TracingBoth {
		if addr := strings.TrimSpace(getenv(EnvXRayDaemon)); addr != "" {
			em, err := NewXRayEmitter(addr)
			if err != nil {
				return nil, err
			}
			xr = em
		}
	}
	switch mode {
	case "", TracingXRay, TracingNone:
	case TracingOTel, TracingBoth:
		if fn := getenv("AWS_LAMBDA_FUNCTION_NAME"); fn != "" {
			service = fn
		}
		em, err := NewOTelEmitter(ctx, OTelConfig{
			Endpoint:       strings.TrimSpace(getenv(EnvOTLPEndpoint)),
			TracesEndpoint: strings.TrimSpace(getenv(EnvOTLPTracesEndpoint)),
			Service:        service,
		})
		if err != nil {
			return nil, err
		}
		ot = em
	default:
		return nil, fmt.Errorf("audit: %s=%q: want xray, otel, both or none", EnvTracing, mode)
	}
	switch {
	case xr != nil && ot != nil:
		return Tee{xr, ot}, nil
	case xr != nil:
		return xr, nil
	case ot != nil:
		return ot, nil
	}
	return nil, nil
}

// NewFromEnv returns the Auditor a Lambda function's environment configures,
// or nil, nil when MCPFN_AUDIT_TABLE is unset (auditing off). Rows expire
// after MCPFN_AUDIT_RETENTION_DAYS (default 90) and MCPFN_AUDIT_ENTITY_DIMENSION
// names the indexed entity dimension (default entityId). The DynamoDB
// client comes from config.LoadDefaultConfig, so credentials, region and
// AWS_ENDPOINT_URL_DYNAMODB (DynamoDB Local) are honoured. Spans go to
// AWS_XRAY_DAEMON_ADDRESS when it is set, which Lambda does for functions
// with tracing enabled, and/or over OTLP as MCPFN_TRACING says
// ([TracingFrom]).
func NewFromEnv(ctx context.Context) (*Auditor, error) {
	return NewFrom(ctx, os.Getenv, func() (aws.Config, error) { return config.LoadDefaultConfig(ctx) })
}

// NewFrom is NewFromEnv over any variable source (the gateway's
// configuration parser reads the template's variables through it locally)
// with the AWS configuration awsConfig returns, asked for only when auditing
// is on: a gateway loads one configuration for all its clients.
func NewFrom(ctx context.Context, getenv func(string) string, awsConfig func() (aws.Config, error)) (*Auditor, error) {
	return newFrom(ctx, getenv, awsConfig)
}

// NewFromEnvWith is [NewFromEnv] with the AWS configuration awsConfig
// returns, asked for only when auditing is on: a function's start loads one
// configuration for all its clients (adapter.Start).
func NewFromEnvWith(ctx context.Context, awsConfig func() (aws.Config, error)) (*Auditor, error) {
	return newFrom(ctx, os.Getenv, awsConfig)
}

func newFrom(ctx context.Context, getenv func(string) string, awsConfig func() (aws.Config, error)) (*Auditor, error) {
	table := getenv(EnvTable)
	if table == "" {
		return nil, nil
	}
	awsCfg, err := awsConfig()
	if err != nil {
		return nil, fmt.Errorf("audit: aws config: %w", err)
	}
	cfg := Config{
		Table:           table,
		Client:          NewDynamoClient(awsCfg),
		EntityDimension: getenv(EnvEntityDimension),
	}
	if v := getenv(EnvRetentionDays); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 {
			return nil, fmt.Errorf("audit: %s=%q: want a whole number of days ≥ 1", EnvRetentionDays, v)
		}
		cfg.TTL = time.Duration(days) * 24 * time.Hour
	}
	em, err := TracingFrom(ctx, getenv, "mcpfn-function")
	if err != nil {
		return nil, err
	}
	cfg.Emitter = em
	return New(cfg), nil
}
