//go:build !mcpfn_xraysdk

package audit

import (
	"encoding/json"
	"fmt"
	"net"
)

// XRayEmitter sends spans to an X-Ray daemon over UDP. The default build
// writes the daemon protocol itself instead of linking aws-xray-sdk-go,
// whose dependencies (aws-sdk-go v1, gRPC, fasthttp) cost a function 7 MB
// of binary and several milliseconds of cold start; the build tag
// mcpfn_xraysdk links the SDK's emitter instead. The documents are the
// same; see docs/decisions/0004-xray-emitter.md.
type XRayEmitter struct {
	conn *net.UDPConn
}

// NewXRayEmitter returns an emitter for the daemon at addr, in the form of
// AWS_XRAY_DAEMON_ADDRESS: "host:port" or "udp:host:port tcp:host:port".
func NewXRayEmitter(addr string) (*XRayEmitter, error) {
	udp, err := daemonUDPAddr(addr)
	if err != nil {
		return nil, err
	}
	// Dialing UDP sends nothing; it only fixes the destination.
	conn, err := net.DialUDP("udp", nil, udp)
	if err != nil {
		return nil, fmt.Errorf("audit: x-ray emitter: %w", err)
	}
	return &XRayEmitter{conn: conn}, nil
}

// daemonHeader precedes every document sent to the X-Ray daemon.
const daemonHeader = `{"format": "json", "version": 1}` + "\n"

// spanDocument is an X-Ray segment document with the fields a span uses.
type spanDocument struct {
	TraceID     string                    `json:"trace_id"`
	ID          string                    `json:"id"`
	ParentID    string                    `json:"parent_id,omitempty"`
	Type        string                    `json:"type,omitempty"`
	Name        string                    `json:"name"`
	StartTime   float64                   `json:"start_time"`
	EndTime     float64                   `json:"end_time"`
	Error       bool                      `json:"error,omitempty"`
	Fault       bool                      `json:"fault,omitempty"`
	Throttle    bool                      `json:"throttle,omitempty"`
	Annotations map[string]any            `json:"annotations,omitempty"`
	Metadata    map[string]map[string]any `json:"metadata,omitempty"`
}

// EmitSpan sends s as one UDP datagram; errors are dropped, as the SDK does:
// the audit row, not the span, is the record of the call.
func (e *XRayEmitter) EmitSpan(s Span) {
	doc := spanDocument{
		TraceID: s.TraceID, ID: s.ID, ParentID: s.ParentID, Name: s.Name,
		StartTime: epochSeconds(s.Start), EndTime: epochSeconds(s.End),
		Error: s.Error, Fault: s.Fault, Throttle: s.Throttle,
		Annotations: s.Annotations, Metadata: s.Metadata,
	}
	if s.ParentID != "" {
		doc.Type = "subsegment"
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	_, _ = e.conn.Write(append([]byte(daemonHeader), b...))
}
