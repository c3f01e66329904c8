package viewer

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/xray"
	"github.com/aws/aws-sdk-go-v2/service/xray/types"
)

// pagedTraces answers BatchGetTraces from fixed pages. There is no X-Ray
// API emulator to run against, so this stands in for the service's answer
// shape: documents as JSON strings, subsegments nested, NextToken paging.
type pagedTraces [][]string

func (p pagedTraces) BatchGetTraces(ctx context.Context, in *xray.BatchGetTracesInput, _ ...func(*xray.Options)) (*xray.BatchGetTracesOutput, error) {
	i := 0
	if in.NextToken != nil {
		i = 1
	}
	out := &xray.BatchGetTracesOutput{}
	tr := types.Trace{Id: aws.String(in.TraceIds[0])}
	for _, d := range p[i] {
		tr.Segments = append(tr.Segments, types.Segment{Document: aws.String(d)})
	}
	out.Traces = []types.Trace{tr}
	if i+1 < len(p) {
		out.NextToken = aws.String("next")
	}
	return out, nil
}

// TestXRaySegmentsFlattensAndPages: a Lambda function segment with the
// tool's subsegment nested inside, on a second page, comes out as two
// segments, the nested one with its trace and parent filled in.
func TestXRaySegmentsFlattensAndPages(t *testing.T) {
	const trace = "1-6a1b2c3d-0123456789abcdef01234567"
	src := XRaySegments{Client: pagedTraces{
		{`{"id":"1111111111111111","trace_id":"` + trace + `","name":"GatewayFunction","origin":"AWS::Lambda::Function","start_time":1.5,"end_time":2}`},
		{`{"id":"2222222222222222","trace_id":"` + trace + `","parent_id":"1111111111111111","name":"BroadcastGetFunction","origin":"AWS::Lambda::Function","start_time":1.6,"end_time":1.9,
		   "subsegments":[{"id":"3333333333333333","name":"broadcast_get","start_time":1.7,"end_time":1.8,"fault":true}]}`, `not json`},
	}}
	segs, err := src.Segments(context.Background(), trace)
	if err != nil || len(segs) != 3 {
		t.Fatalf("segments %+v, %v", segs, err)
	}
	nested := segs[2]
	if nested.ID != "3333333333333333" || nested.ParentID != "2222222222222222" || nested.TraceID != trace || !nested.Subsegment || !nested.Fault {
		t.Errorf("nested subsegment %+v", nested)
	}
	if segs[0].Origin != "AWS::Lambda::Function" || segs[0].Subsegment || segs[0].Duration().Milliseconds() != 500 {
		t.Errorf("segment %+v", segs[0])
	}
}
