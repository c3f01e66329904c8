//go:build mcpfn_otel

package audit

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/wire"
)

// A generated trace id is an X-Ray trace id: its first 8 hex digits are the
// generator's clock in epoch seconds, the other 24 random.
func TestXRayIDsTraceIDStartsWithEpochSeconds(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	gen := xrayIDs{now: func() time.Time { return at }}
	seen := map[trace.TraceID]bool{}
	for range 100 {
		tid, sid := gen.NewIDs(context.Background())
		if got := binary.BigEndian.Uint32(tid[:4]); int64(got) != at.Unix() {
			t.Fatalf("trace id %s starts with %08x, want %08x (epoch seconds)", tid, got, at.Unix())
		}
		xr := XRayTraceID(tid.String())
		if tr := wire.ParseTraceHeader("Root=" + xr + ";Parent=" + sid.String()); !tr.WellFormed() {
			t.Fatalf("ids %s / %s are not an X-Ray trace id and segment id", tid, sid)
		}
		if !tid.IsValid() || !sid.IsValid() {
			t.Fatalf("invalid ids %s / %s", tid, sid)
		}
		if seen[tid] {
			t.Fatalf("trace id %s generated twice", tid)
		}
		seen[tid] = true
	}
}

// The clock defaults to the wall clock.
func TestXRayIDsDefaultClock(t *testing.T) {
	before := time.Now().Unix()
	tid, _ := xrayIDs{}.NewIDs(context.Background())
	after := time.Now().Unix()
	if s := int64(binary.BigEndian.Uint32(tid[:4])); s < before || s > after {
		t.Errorf("trace id %s: epoch %d outside [%d, %d]", tid, s, before, after)
	}
}

func TestXRayIDsNewSpanID(t *testing.T) {
	tid, _ := xrayIDs{}.NewIDs(context.Background())
	seen := map[trace.SpanID]bool{}
	for range 100 {
		sid := xrayIDs{}.NewSpanID(context.Background(), tid)
		if !sid.IsValid() || seen[sid] {
			t.Fatalf("span id %s invalid or repeated", sid)
		}
		seen[sid] = true
	}
}

func TestSpanContextFromXRay(t *testing.T) {
	const (
		root   = "1-5759e988-bd862e3fe1be46a994272793"
		w3c    = "5759e988bd862e3fe1be46a994272793"
		parent = "53995c3f42cd8ad8"
	)
	for _, tc := range []struct {
		name, header string
		ok, sampled  bool
	}{
		{"sampled", "Root=" + root + ";Parent=" + parent + ";Sampled=1", true, true},
		{"not sampled", "Root=" + root + ";Parent=" + parent + ";Sampled=0", true, false},
		{"undecided", "Root=" + root + ";Parent=" + parent + ";Sampled=?", true, false},
		{"no sampling part", "Root=" + root + ";Parent=" + parent, true, false},
		{"any order, spaces, other parts", "Sampled=1; Lineage=a87bd80c:1|68fd508a:5; Parent=" + parent + "; Root=" + root, true, true},

		{"empty", "", false, false},
		{"no parent", "Root=" + root + ";Sampled=1", false, false},
		{"no root", "Parent=" + parent + ";Sampled=1", false, false},
		{"empty parts", "Root=;Parent=;Sampled=1", false, false},
		{"not key=value", "garbage", false, false},
		{"root version 2", "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=" + parent, false, false},
		{"root upper case", "Root=1-5759E988-BD862E3FE1BE46A994272793;Parent=" + parent, false, false},
		{"root too short", "Root=1-5759e988-bd862e3fe1be46a99427279;Parent=" + parent, false, false},
		{"root without dashes", "Root=15759e988bd862e3fe1be46a994272793;Parent=" + parent, false, false},
		{"root all zero", "Root=1-00000000-000000000000000000000000;Parent=" + parent, false, false},
		{"parent too long", "Root=" + root + ";Parent=" + parent + "0", false, false},
		{"parent not hex", "Root=" + root + ";Parent=53995c3f42cd8adz", false, false},
		{"parent all zero", "Root=" + root + ";Parent=0000000000000000", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, ok := spanContextFromXRay(tc.header)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (span context %+v)", ok, tc.ok, sc)
			}
			if !ok {
				if sc.IsValid() {
					t.Errorf("refused header gave a valid span context %+v", sc)
				}
				return
			}
			if sc.TraceID().String() != w3c || sc.SpanID().String() != parent {
				t.Errorf("ids %s / %s, want %s / %s", sc.TraceID(), sc.SpanID(), w3c, parent)
			}
			if sc.IsSampled() != tc.sampled || !sc.IsRemote() || !sc.IsValid() {
				t.Errorf("sampled %v remote %v valid %v, want sampled %v, remote, valid", sc.IsSampled(), sc.IsRemote(), sc.IsValid(), tc.sampled)
			}
		})
	}
}

// The extraction follows the documented mapping (docs/tracing.md) for any
// ids mcpfn makes: W3CTraceID for the trace, the span id as is, and the
// header XRayHeader writes for the same trace and parent.
func TestSpanContextFromXRayFollowsTheMapping(t *testing.T) {
	for range 50 {
		xr, span := NewTraceID(time.Now()), NewSpanID()
		tp := Traceparent{TraceID: W3CTraceID(xr), ParentID: span, Sampled: true}
		sc, ok := spanContextFromXRay(tp.XRayHeader())
		if !ok || sc.TraceID().String() != tp.TraceID || sc.SpanID().String() != span || !sc.IsSampled() {
			t.Fatalf("%s: span context %s/%s sampled %v, want %s/%s sampled", tp.XRayHeader(), sc.TraceID(), sc.SpanID(), sc.IsSampled(), tp.TraceID, span)
		}
	}
}
