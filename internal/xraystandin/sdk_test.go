package xraystandin_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/strategy/sampling"
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"

	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

func init() {
	// The SDK logs every emitter refresh at info level; keep test output to
	// what fails.
	xray.SetLogger(xraylog.NewDefaultLogger(io.Discard, xraylog.LogLevelError))
}

// configureSDK points the real X-Ray SDK at d and samples every segment: the
// default centralized strategy would ask the daemon's TCP sampling proxy,
// which the stand-in does not have, and fall back to sampling one segment a
// second.
func configureSDK(t *testing.T, d *xraystandin.Daemon) {
	t.Helper()
	all, err := sampling.NewLocalizedStrategyFromJSONBytes([]byte(`{"version":2,"default":{"fixed_target":0,"rate":1},"rules":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := xray.Configure(xray.Config{DaemonAddr: d.Addr(), SamplingStrategy: all}); err != nil {
		t.Fatal(err)
	}
}

// The Go SDK outside Lambda: a segment whose closed subsegments travel
// nested in the segment's document.
func TestSDKSegmentWithNestedSubsegment(t *testing.T) {
	d := listen(t)
	configureSDK(t, d)

	ctx, seg := xray.BeginSegment(context.Background(), "standin-segment")
	_, sub := xray.BeginSubsegment(ctx, "mcpfn.call")
	if err := sub.AddAnnotation("tool", "broadcast_get"); err != nil {
		t.Fatal(err)
	}
	if err := sub.AddMetadataToNamespace("mcpfn", "callId", "c-42"); err != nil {
		t.Fatal(err)
	}
	sub.Close(errors.New("boom"))
	seg.Close(nil)

	wctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got, err := d.WaitFor(wctx, byName("mcpfn.call"))
	if err != nil {
		t.Fatalf("WaitFor: %v (documents %d, malformed %d: %s)", err, len(d.Documents()), d.Malformed(), d.LastMalformed())
	}
	if got.ID != sub.ID || got.ParentID != seg.ID || got.TraceID != seg.TraceID {
		t.Errorf("subsegment ids = (%s, parent %s, trace %s), want (%s, %s, %s)", got.ID, got.ParentID, got.TraceID, sub.ID, seg.ID, seg.TraceID)
	}
	if got.Annotations["tool"] != "broadcast_get" || !got.Fault && !got.Error {
		t.Errorf("subsegment = %+v, want annotation tool and an error flag", got)
	}
	if md, _ := got.Metadata["mcpfn"].(map[string]any); md["callId"] != "c-42" {
		t.Errorf("metadata = %v", got.Metadata)
	}
	if got.EndTime < got.StartTime || got.InProgress {
		t.Errorf("subsegment times %f..%f in progress %v", got.StartTime, got.EndTime, got.InProgress)
	}
	docs := d.Documents()
	if len(docs) != 1 || docs[0].ID != seg.ID || docs[0].Type != "" || len(docs[0].Subsegments) != 1 {
		t.Errorf("documents = %+v, want the one segment with its subsegment nested", docs)
	}
	if d.Malformed() != 0 {
		t.Errorf("SDK output counted as malformed: %s", d.LastMalformed())
	}
}

// CloseAndStream sends a subsegment as its own document, the way subsegments
// of Lambda's facade segment reach the daemon.
func TestSDKStreamedSubsegment(t *testing.T) {
	d := listen(t)
	configureSDK(t, d)

	ctx, seg := xray.BeginSegment(context.Background(), "standin-parent")
	_, sub := xray.BeginSubsegment(ctx, "streamed")
	sub.CloseAndStream(nil)

	wctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got, err := d.WaitFor(wctx, byName("streamed"))
	if err != nil {
		t.Fatalf("WaitFor: %v (malformed %d: %s)", err, d.Malformed(), d.LastMalformed())
	}
	if got.Type != "subsegment" || got.ParentID != seg.ID || got.TraceID != seg.TraceID {
		t.Errorf("streamed subsegment = %+v", got)
	}
	seg.Close(nil)
	if _, err := d.WaitFor(wctx, byName("standin-parent")); err != nil {
		t.Fatal(err)
	}
}
