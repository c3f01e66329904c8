//go:build mcpfn_nootel

package audit

import (
	"context"
	"errors"
	"time"
)

// OTelBuilt reports whether this binary links the OpenTelemetry emitter
// (false: built with the tag mcpfn_nootel).
const OTelBuilt = false

// OTelConfig configures an OTelEmitter (see the default build).
type OTelConfig struct {
	Endpoint, TracesEndpoint string
	Service                  string
	Timeout                  time.Duration
	SigV4Region              string
	SigV4Credentials         any
}

// OTelEmitter is absent from this build.
type OTelEmitter struct{}

// NewOTelEmitter fails: this binary was built with mcpfn_nootel.
func NewOTelEmitter(context.Context, OTelConfig) (*OTelEmitter, error) {
	return nil, errors.New("audit: MCPFN_TRACING asks for OpenTelemetry, but this binary was built with the tag mcpfn_nootel")
}

// EmitSpan does nothing.
func (*OTelEmitter) EmitSpan(Span) {}

// FlushSpans does nothing.
func (*OTelEmitter) FlushSpans(context.Context) error { return nil }

// Shutdown does nothing.
func (*OTelEmitter) Shutdown(context.Context) error { return nil }
