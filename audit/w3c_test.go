package audit_test

import (
	"testing"

	"github.com/mcpfn/mcpfn/audit"
)

func TestParseTraceparent(t *testing.T) {
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for v, want := range map[string]bool{
		"00-" + tid + "-" + sid + "-01":                      true,
		"00-" + tid + "-" + sid + "-00":                      true,
		" 00-" + tid + "-" + sid + "-01 ":                    true,
		"01-" + tid + "-" + sid + "-01-future":               true,
		"00-" + tid + "-" + sid + "-01-x":                    false, // version 00 has exactly four fields
		"ff-" + tid + "-" + sid + "-01":                      false,
		"00-" + tid + "-0000000000000000-01":                 false,
		"00-00000000000000000000000000000000-" + sid + "-01": false,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-" + sid + "-01": false,
		"00-" + tid + "-" + sid:                              false,
		"":                                                   false,
		"<script>":                                           false,
	} {
		tp, ok := audit.ParseTraceparent(v)
		if ok != want {
			t.Errorf("%q: ok %v, want %v", v, ok, want)
			continue
		}
		if ok && (tp.TraceID != tid || tp.ParentID != sid) {
			t.Errorf("%q: %+v", v, tp)
		}
	}
	tp, _ := audit.ParseTraceparent("00-" + tid + "-" + sid + "-01")
	if !tp.Sampled || tp.String() != "00-"+tid+"-"+sid+"-01" {
		t.Errorf("%+v %s", tp, tp)
	}
	if h := tp.XRayHeader(); h != "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent="+sid+";Sampled=1" {
		t.Errorf("x-ray header %s", h)
	}
	if audit.W3CTraceID("1-4bf92f35-77b34da6a3ce929d0e0e4736") != tid || audit.XRayTraceID(tid) != "1-4bf92f35-77b34da6a3ce929d0e0e4736" {
		t.Error("mapping")
	}
	for _, bad := range []string{"", "1-4bf92f35-77b34da6a3ce929d0e0e473", "2-4bf92f35-77b34da6a3ce929d0e0e4736", "1-4bf92f3577b34da6a3ce929d0e0e4736x"} {
		if audit.W3CTraceID(bad) != "" {
			t.Errorf("W3CTraceID(%q)", bad)
		}
	}
}
