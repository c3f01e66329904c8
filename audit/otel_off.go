//go:build !mcpfn_otel

package audit

import (
	"context"
	"errors"
	"time"
)

// OTelBuilt reports whether this binary links the OpenTelemetry emitter
// (false: built without the tag mcpfn_otel, the default).
const OTelBuilt = false

// OTelConfig configures an OTelEmitter (see the default build).
type OTelConfig struct {
	Endpoint, TracesEndpoint string
	Service                  string
	Timeout                  time.Duration
	SigV4Region              string
	SigV4Credentials         any
}

// OTelEmitter is absent from this build (see the tag mcpfn_otel).
type OTelEmitter struct{}

// NewOTelEmitter fails: this binary was built without mcpfn_otel.
func NewOTelEmitter(context.Context, OTelConfig) (*OTelEmitter, error) {
	return nil, errors.New("audit: MCPFN_TRACING asks for OpenTelemetry, which this binary does not link: build it with -tags mcpfn_otel (docs/tracing.md)")
}

// EmitSpan does nothing.
func (*OTelEmitter) EmitSpan(Span) {}

// FlushSpans does nothing.
func (*OTelEmitter) FlushSpans(context.Context) error { return nil }

// Shutdown does nothing.
func (*OTelEmitter) Shutdown(context.Context) error { return nil }
