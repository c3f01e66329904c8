// Package otlpstandin is a stand-in for an OpenTelemetry collector's
// OTLP/HTTP trace receiver: it accepts POST /v1/traces, decodes the
// ExportTraceServiceRequest (protobuf, or the OTLP JSON encoding) with the
// OpenTelemetry proto packages, and appends each span as one JSON line to a
// writer (the local stack's .local/otlp.jsonl). The writer is the record;
// memory holds only the latest spans (SetRetain, default 4,096), which is
// what tests wait on, so a receiver serving for hours stays the size it was
// after a minute.
//
// Lines carry ids in hex, as the OTLP JSON encoding and every trace UI
// spell them, so they join with audit rows and X-Ray documents by plain
// string comparison (see docs/tracing.md for the X-Ray ↔ W3C mapping).
package otlpstandin

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/internal/recent"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened with its resource and scope.
type Span struct {
	TraceID      string         `json:"traceId"`
	SpanID       string         `json:"spanId"`
	ParentSpanID string         `json:"parentSpanId,omitempty"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	Start        time.Time      `json:"start"`
	End          time.Time      `json:"end"`
	Attributes   map[string]any `json:"attributes,omitempty"`
	Status       string         `json:"status,omitempty"` // "", "ok", "error"
	StatusMsg    string         `json:"statusMessage,omitempty"`
	Links        []Link         `json:"links,omitempty"`
	Resource     map[string]any `json:"resource,omitempty"`
	Scope        string         `json:"scope,omitempty"`
	Received     time.Time      `json:"received"`
}

// Link is a span link.
type Link struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
}

// ErrClosed is returned by WaitFor once the receiver is closed and no span
// matched.
var ErrClosed = errors.New("otlpstandin: closed")

// MaxBody bounds one request body (as a collector's default does).
const MaxBody = 16 << 20

// Receiver is an OTLP/HTTP trace receiver.
type Receiver struct {
	ln  net.Listener
	srv *http.Server

	mu sync.Mutex
	// spans are the latest spans received; the output has them all.
	spans   *recent.Window[Span]
	out     io.Writer
	changed chan struct{}
	closed  bool
	bad     int
	lastBad string
}

// Listen starts a receiver on a TCP address such as "127.0.0.1:4318", or
// "127.0.0.1:0" for any free port.
func Listen(addr string) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("otlpstandin: %w", err)
	}
	r := &Receiver{ln: ln, changed: make(chan struct{}), spans: recent.New[Span](0)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.handle)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// URL is the receiver's base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
func (r *Receiver) URL() string { return "http://" + r.ln.Addr().String() }

// SetOutput makes the receiver append every span it accepts from now on to
// w as one JSON line; nil stops it.
func (r *Receiver) SetOutput(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out = w
}

// SetRetain sets how many of the latest spans the receiver keeps in memory
// for Spans and WaitFor (n <= 0: the default, 4,096). Older ones are only
// in the output.
func (r *Receiver) SetRetain(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans.Resize(n)
}

// Received counts the spans accepted since Listen, whether or not they are
// still held.
func (r *Receiver) Received() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans.Next()
}

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	body := io.Reader(http.MaxBytesReader(w, req.Body, MaxBody))
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			r.reject(w, http.StatusBadRequest, "gzip: "+err.Error())
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, MaxBody)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		r.reject(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	var msg collectortrace.ExportTraceServiceRequest
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch ct {
	case "application/x-protobuf":
		err = proto.Unmarshal(b, &msg)
	case "application/json":
		err = protojson.Unmarshal(b, &msg)
	default:
		r.reject(w, http.StatusUnsupportedMediaType, "content type "+strconv.Quote(ct))
		return
	}
	if err != nil {
		r.reject(w, http.StatusBadRequest, "decode: "+err.Error())
		return
	}
	r.accept(&msg)
	resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	if ct == "application/json" {
		resp, _ = protojson.Marshal(&collectortrace.ExportTraceServiceResponse{})
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(resp)
}

func (r *Receiver) reject(w http.ResponseWriter, code int, why string) {
	r.mu.Lock()
	r.bad++
	r.lastBad = why
	r.mu.Unlock()
	http.Error(w, why, code)
}

func (r *Receiver) accept(msg *collectortrace.ExportTraceServiceRequest) {
	now := time.Now().UTC()
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			scope := ss.GetScope().GetName()
			for _, sp := range ss.GetSpans() {
				s := Span{
					TraceID:      hex.EncodeToString(sp.GetTraceId()),
					SpanID:       hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()),
					Name:         sp.GetName(),
					Kind:         kindName(sp.GetKind()),
					Start:        time.Unix(0, int64(sp.GetStartTimeUnixNano())).UTC(),
					End:          time.Unix(0, int64(sp.GetEndTimeUnixNano())).UTC(),
					Attributes:   attrMap(sp.GetAttributes()),
					Resource:     res,
					Scope:        scope,
					Received:     now,
				}
				switch sp.GetStatus().GetCode() {
				case tracepb.Status_STATUS_CODE_OK:
					s.Status = "ok"
				case tracepb.Status_STATUS_CODE_ERROR:
					s.Status = "error"
				}
				s.StatusMsg = sp.GetStatus().GetMessage()
				for _, l := range sp.GetLinks() {
					s.Links = append(s.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				got = append(got, s)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range got {
		r.spans.Add(s)
	}
	if r.out != nil {
		for _, s := range got {
			line, err := json.Marshal(s)
			if err == nil {
				_, _ = r.out.Write(append(line, '\n'))
			}
		}
	}
	if len(got) > 0 {
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

func kindName(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_INTERNAL:
		return "internal"
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "unspecified"
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return m
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attrMap(x.KvlistValue.GetValues())
	}
	return nil
}

// Spans returns the spans held (the latest received, see SetRetain), in
// arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans.All()
}

// Rejected counts the requests refused so far and says why the latest was.
func (r *Receiver) Rejected() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad, r.lastBad
}

// WaitFor returns the first span, received before (and still held, see
// SetRetain) or during the call, for which match is true, waiting until ctx
// is done or the receiver closes.
func (r *Receiver) WaitFor(ctx context.Context, match func(Span) bool) (Span, error) {
	var seen uint64
	for {
		r.mu.Lock()
		spans, next, _ := r.spans.Since(seen)
		seen = next
		changed, closed := r.changed, r.closed
		r.mu.Unlock()
		for _, s := range spans {
			if match(s) {
				return s, nil
			}
		}
		if closed {
			return Span{}, ErrClosed
		}
		select {
		case <-ctx.Done():
			return Span{}, fmt.Errorf("otlpstandin: no matching span: %w", ctx.Err())
		case <-changed:
		}
	}
}

// Close stops the receiver; the spans stay readable. It is idempotent.
func (r *Receiver) Close() error {
	err := r.srv.Close()
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.changed)
		r.changed = make(chan struct{})
	}
	r.mu.Unlock()
	return err
}
