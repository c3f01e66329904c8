package otlpstandin_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpfn/mcpfn/internal/otlpstandin"
)

func request() *collectortrace.ExportTraceServiceRequest {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "fn")}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "scope"},
			Spans: []*tracepb.Span{{
				TraceId:           []byte{0x6b, 0x0c, 0x13, 0xc0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
				SpanId:            []byte{0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4},
				ParentSpanId:      []byte{1, 1, 1, 1, 2, 2, 2, 2},
				Name:              "tools/call echo",
				Kind:              tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: uint64(start.UnixNano()),
				EndTimeUnixNano:   uint64(start.Add(time.Millisecond).UnixNano()),
				Attributes: []*commonpb.KeyValue{str("gen_ai.tool.name", "echo"),
					{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 7}}}},
				Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "VALIDATION_ERROR"},
			}},
		}},
	}}}
}

func TestReceiverDecodesProtobufJSONAndGzip(t *testing.T) {
	r, err := otlpstandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := filepath.Join(t.TempDir(), "otlp.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r.SetOutput(f)

	pb, _ := proto.Marshal(request())
	js, _ := protojson.Marshal(request())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(pb)
	_ = zw.Close()
	for _, c := range []struct {
		ct, enc string
		body    []byte
	}{{"application/x-protobuf", "", pb}, {"application/json", "", js}, {"application/x-protobuf", "gzip", gz.Bytes()}} {
		req, _ := http.NewRequest(http.MethodPost, r.URL()+"/v1/traces", bytes.NewReader(c.body))
		req.Header.Set("Content-Type", c.ct)
		if c.enc != "" {
			req.Header.Set("Content-Encoding", c.enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", c.ct, c.enc, resp.StatusCode)
		}
	}
	spans := r.Spans()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, s := range spans {
		if s.TraceID != "6b0c13c00102030405060708090a0b0c" || s.SpanID != "aabbccdd01020304" || s.ParentSpanID != "0101010102020202" ||
			s.Kind != "server" || s.Status != "error" || s.StatusMsg != "VALIDATION_ERROR" || s.Attributes["gen_ai.tool.name"] != "echo" ||
			s.Attributes["n"] != int64(7) || s.Resource["service.name"] != "fn" || s.Scope != "scope" || s.End.Sub(s.Start) != time.Millisecond {
			t.Errorf("span %+v", s)
		}
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line["spanId"] != "aabbccdd01020304" {
		t.Errorf("line %s (%v)", lines[0], err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := r.WaitFor(ctx, func(s otlpstandin.Span) bool { return s.SpanID == "aabbccdd01020304" }); err != nil {
		t.Error(err)
	}
}

func TestReceiverRejectsWhatIsNotOTLP(t *testing.T) {
	r, err := otlpstandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		ct   string
		body string
		want int
	}{{"text/plain", "x", http.StatusUnsupportedMediaType}, {"application/x-protobuf", "\xff\xff\xff", http.StatusBadRequest}, {"application/json", `{"resourceSpans": 3}`, http.StatusBadRequest}} {
		resp, err := http.Post(r.URL()+"/v1/traces", c.ct, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.ct, resp.StatusCode, c.want)
		}
	}
	if n, _ := r.Rejected(); n != 3 || len(r.Spans()) != 0 {
		t.Errorf("rejected %d, spans %d", n, len(r.Spans()))
	}
}

// The output is the record and memory holds the latest spans only.
func TestMemoryHoldsTheLatestSpans(t *testing.T) {
	r, err := otlpstandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	r.SetOutput(&out) // written under the receiver's lock, read after the requests
	r.SetRetain(2)
	for i := range 5 {
		req := request()
		req.ResourceSpans[0].ScopeSpans[0].Spans[0].SpanId = []byte{0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, byte(i)}
		pb, _ := proto.Marshal(req)
		resp, err := http.Post(r.URL()+"/v1/traces", "application/x-protobuf", bytes.NewReader(pb))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var ids []string
	for _, s := range r.Spans() {
		ids = append(ids, s.SpanID)
	}
	if strings.Join(ids, " ") != "aabbccdd01020303 aabbccdd01020304" {
		t.Errorf("held %v, want the latest two", ids)
	}
	if n := strings.Count(out.String(), "\n"); n != 5 || r.Received() != 5 {
		t.Errorf("output has %d lines, Received %d: want every span, 5", n, r.Received())
	}
}
