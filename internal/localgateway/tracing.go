package localgateway

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/wire"
)

// Tracing stands in, for the local gateway, for what Lambda does
// in front of a function with active tracing (template.yaml sets Tracing:
// Active): it opens the function's segment — a new trace, or a child of the
// caller's X-Amzn-Trace-Id when that is well formed — hands the function the
// header naming that segment as parent, and sends the segment to the X-Ray
// daemon when the request ends. Without it the local gateway would see no
// trace at all and every call's rows and spans would start traces of their
// own, unlike on AWS.
//
// The header reaches the gateway as Lambda hands it over: in the request's
// context under aws-lambda-go's key, never in place of the caller's own
// X-Amzn-Trace-Id (the gateway tells the two apart: a caller's W3C
// traceparent wins over a trace Lambda started, not over the caller's
// X-Ray header). The tool functions are not given a segment of their own:
// the emulator does not pass the trace header to the runtime (see
// docs/local.md), and the adapter falls back to the envelope's header,
// whose parent is the gateway's forward subsegment.
func Tracing(next http.Handler, name string, spans audit.SpanEmitter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		root, parent := "", ""
		if h := r.Header.Get("X-Amzn-Trace-Id"); h != "" {
			root, parent = traceField(h, "Root"), traceField(h, "Parent")
			if !traceRootRE.MatchString(root) || (parent != "" && !spanIDRE.MatchString(parent)) {
				root, parent = "", ""
			}
			if traceField(h, "Sampled") == "0" && root != "" {
				// Not sampled: pass it on untouched, emit nothing.
				next.ServeHTTP(w, r)
				return
			}
		}
		if root == "" {
			root = audit.NewTraceID(start)
		}
		id := audit.NewSpanID()
		//lint:ignore SA1029 aws-lambda-go's own key, which the gateway reads
		r = r.WithContext(context.WithValue(r.Context(), wire.TraceHeaderKey, "Root="+root+";Parent="+id+";Sampled=1"))
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		spans.EmitSpan(audit.Span{
			TraceID:  root,
			ID:       id,
			ParentID: parent,
			Name:     name,
			Start:    start,
			End:      time.Now(),
			Error:    rec.status >= 400 && rec.status < 500,
			Fault:    rec.status >= 500,
			Throttle: rec.status == http.StatusTooManyRequests,
			Annotations: map[string]any{
				"origin":      "AWS::Lambda::Function",
				"http_status": rec.status,
			},
		})
	})
}

var (
	traceRootRE = regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)
	spanIDRE    = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// traceField returns one key's value of an X-Ray trace header.
func traceField(h, key string) string {
	for _, part := range strings.Split(h, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == key {
			return v
		}
	}
	return ""
}

// statusRecorder remembers the status code written, for the segment's
// error/fault flags. It forwards Flush so streamed responses still stream.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
