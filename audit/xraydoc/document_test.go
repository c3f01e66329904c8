package xraydoc_test

import (
	"testing"

	"github.com/mcpfn/mcpfn/audit/xraydoc"
)

// TestParseFillsNestedSubsegments: a subsegment nested in its segment gets
// the trace and parent its position implies and its own Raw, and Flatten
// lists it after its parent.
func TestParseFillsNestedSubsegments(t *testing.T) {
	doc, err := xraydoc.Parse([]byte(`{"id":"a1","trace_id":"1-5f000000-000000000000000000000001","name":"fn","start_time":1,` +
		`"metadata":{"mcpfn":{"operation":"tools/call"}},"subsegments":[{"id":"b2","name":"audit","start_time":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	all := xraydoc.Flatten(nil, doc)
	if len(all) != 2 {
		t.Fatalf("flattened %d documents, want 2", len(all))
	}
	sub := all[1]
	if sub.ID != "b2" || sub.TraceID != doc.TraceID || sub.ParentID != "a1" || string(sub.Raw) != `{"id":"b2","name":"audit","start_time":2}` {
		t.Errorf("nested subsegment: %+v", sub)
	}
	if md, _ := doc.Metadata["mcpfn"].(map[string]any); md["operation"] != "tools/call" {
		t.Errorf("metadata: %v", doc.Metadata)
	}
	if _, err := xraydoc.Parse([]byte(`{"id":`)); err == nil {
		t.Error("a broken document parsed")
	}
}
