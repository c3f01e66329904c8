package viewer

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/xray"

	"github.com/mcpfn/mcpfn/audit/xraydoc"
)

// Segment is one X-Ray segment or subsegment of a trace, flattened out of
// the document that carried it.
type Segment struct {
	ID, TraceID, ParentID string
	Name                  string
	// Subsegment is true for a subsegment (sent on its own or nested).
	Subsegment bool
	// Origin is the segment's origin (AWS::Lambda::Function, …), from the
	// document or, for the local stack's stand-in, its annotations.
	Origin                 string
	Start, End             time.Time
	InProgress             bool
	Error, Fault, Throttle bool
	// Operation is the mcpfn metadata's operation (lambda:Invoke for the
	// gateway's forward subsegment).
	Operation string
}

// Duration is End - Start (0 while in progress).
func (s *Segment) Duration() time.Duration {
	if s.End.IsZero() {
		return 0
	}
	return s.End.Sub(s.Start)
}

// SegmentSource finds the segments of one trace.
type SegmentSource interface {
	Segments(ctx context.Context, traceID string) ([]Segment, error)
}

// FileSegments reads segment documents from a JSON-lines file, one document
// per line: the local stack's .local/xray.jsonl. The file is read anew on
// every call (it grows while the stack runs); a missing file has none.
type FileSegments string

// Segments returns the segments of traceID found in the file.
func (f FileSegments) Segments(ctx context.Context, traceID string) ([]Segment, error) {
	file, err := os.Open(string(f))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out []Segment
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), traceID) {
			continue
		}
		doc, err := xraydoc.Parse(line)
		if err != nil || doc.TraceID != traceID {
			continue
		}
		out = segmentsOf(out, doc, false, traceID)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, sc.Err()
}

// XRayAPI is the part of the X-Ray client [XRaySegments] uses.
type XRayAPI interface {
	BatchGetTraces(ctx context.Context, in *xray.BatchGetTracesInput, optFns ...func(*xray.Options)) (*xray.BatchGetTracesOutput, error)
}

// XRaySegments reads a trace's segments from the X-Ray API (BatchGetTraces),
// with the AWS credentials of whoever runs the viewer.
type XRaySegments struct{ Client XRayAPI }

// Segments returns the segments X-Ray has of traceID (none until X-Ray has
// processed the trace, which takes seconds).
func (x XRaySegments) Segments(ctx context.Context, traceID string) ([]Segment, error) {
	in := &xray.BatchGetTracesInput{TraceIds: []string{traceID}}
	var out []Segment
	for {
		res, err := x.Client.BatchGetTraces(ctx, in)
		if err != nil {
			return out, fmt.Errorf("viewer: x-ray BatchGetTraces: %w", err)
		}
		for _, tr := range res.Traces {
			for _, s := range tr.Segments {
				doc, err := xraydoc.Parse([]byte(aws.ToString(s.Document)))
				if err != nil {
					continue
				}
				out = segmentsOf(out, doc, false, traceID)
			}
		}
		if aws.ToString(res.NextToken) == "" {
			return out, nil
		}
		in.NextToken = res.NextToken
	}
}

// segmentsOf appends the document and the subsegments nested in it as the
// viewer's Segments; a nested subsegment's trace and parent are its
// enclosing document's (xraydoc.Parse fills them in), and traceID stands in
// for a trace id the document does not name.
func segmentsOf(out []Segment, d xraydoc.Document, nested bool, traceID string) []Segment {
	s := Segment{
		ID: d.ID, TraceID: cmp.Or(d.TraceID, traceID), ParentID: d.ParentID, Name: d.Name,
		Subsegment: d.Type == "subsegment" || nested,
		Origin:     d.Origin,
		Start:      epoch(d.StartTime), End: epoch(d.EndTime), InProgress: d.InProgress,
		Error: d.Error, Fault: d.Fault, Throttle: d.Throttle,
	}
	if o, ok := d.Annotations["origin"].(string); ok && s.Origin == "" {
		s.Origin = o
	}
	if md, ok := d.Metadata["mcpfn"].(map[string]any); ok {
		s.Operation, _ = md["operation"].(string)
	}
	out = append(out, s)
	for _, sub := range d.Subsegments {
		out = segmentsOf(out, sub, true, traceID)
	}
	return out
}

func epoch(sec float64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(sec*1e6 + 0.5)).UTC()
}
