//go:build mcpfn_xraysdk

package audit

import (
	"fmt"

	"github.com/aws/aws-xray-sdk-go/xray"
)

// XRayEmitter sends spans to an X-Ray daemon over UDP through the X-Ray SDK's
// DefaultEmitter. The SDK's segment API is built around a context-bound
// segment tree it opens and closes itself; a call's span here is detached
// (its parent lives in the Lambda service, and its ids were settled before
// the span is sent), so the emitter gets a standalone *xray.Segment per span.
// This variant is linked only with the build tag mcpfn_xraysdk; the
// default build writes the same documents without the SDK (xray_lite.go).
// See docs/decisions/0004-xray-emitter.md.
type XRayEmitter struct {
	emitter *xray.DefaultEmitter
}

// NewXRayEmitter returns an emitter for the daemon at addr, in the form of
// AWS_XRAY_DAEMON_ADDRESS: "host:port" or "udp:host:port tcp:host:port".
// Unlike the SDK's own parser, addr is used as given even when the
// environment variable is set, so tests can aim at their own daemon.
func NewXRayEmitter(addr string) (*XRayEmitter, error) {
	udp, err := daemonUDPAddr(addr)
	if err != nil {
		return nil, err
	}
	e, err := xray.NewDefaultEmitter(udp)
	if err != nil {
		return nil, fmt.Errorf("audit: x-ray emitter: %w", err)
	}
	return &XRayEmitter{emitter: e}, nil
}

// EmitSpan sends s as one UDP datagram. The SDK emitter drops documents whose
// root segment is not sampled, so the detached segment marks itself sampled:
// the sampling decision was the caller's (Row.Sampled) and has been made.
func (e *XRayEmitter) EmitSpan(s Span) {
	seg := &xray.Segment{
		TraceID:     s.TraceID,
		ID:          s.ID,
		ParentID:    s.ParentID,
		Name:        s.Name,
		StartTime:   epochSeconds(s.Start),
		EndTime:     epochSeconds(s.End),
		Error:       s.Error,
		Fault:       s.Fault,
		Throttle:    s.Throttle,
		Annotations: s.Annotations,
		Metadata:    s.Metadata,
		Sampled:     true,
	}
	if s.ParentID != "" {
		// A subsegment sent on its own must say so and name its trace and
		// parent; X-Ray then attaches it to the Lambda function's segment.
		seg.Type = "subsegment"
	}
	seg.ParentSegment = seg
	seg.Lock() // the SDK expects the caller to hold the segment's lock
	defer seg.Unlock()
	e.emitter.Emit(seg)
}
