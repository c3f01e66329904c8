// Package xraydoc reads X-Ray segment documents: the JSON an X-Ray SDK sends
// to the daemon and BatchGetTraces returns. The X-Ray stand-in
// (internal/xraystandin) receives them and the audit viewer (audit/viewer)
// shows them; both read them with Parse, so the two agree on what a document
// says, nested subsegments included.
package xraydoc

import (
	"bytes"
	"encoding/json"
)

// Document is one segment or subsegment, with the fields mcpfn's tests, the
// stand-in and the viewer look at parsed out; Raw keeps the document as sent.
type Document struct {
	ID       string `json:"id"`
	TraceID  string `json:"trace_id"`
	ParentID string `json:"parent_id"`
	Name     string `json:"name"`
	// Type is "subsegment" for a subsegment sent on its own and empty for a
	// segment (and for subsegments nested in their parent's document).
	Type        string         `json:"type"`
	Namespace   string         `json:"namespace"`
	Origin      string         `json:"origin"`
	StartTime   float64        `json:"start_time"`
	EndTime     float64        `json:"end_time"`
	InProgress  bool           `json:"in_progress"`
	Error       bool           `json:"error"`
	Fault       bool           `json:"fault"`
	Throttle    bool           `json:"throttle"`
	Annotations map[string]any `json:"annotations"`
	// Metadata maps namespace to key to value, as X-Ray stores it.
	Metadata map[string]any `json:"metadata"`
	// Subsegments are the completed subsegments the sender nested inside
	// this document instead of sending them on their own. Parse fills in
	// their TraceID and ParentID from the enclosing document, which X-Ray
	// leaves implicit, and their own Raw.
	Subsegments []Document `json:"subsegments"`

	Raw json.RawMessage `json:"-"`
}

// Parse reads one document. It checks nothing but the JSON: what a receiver
// requires of a document (the daemon's id, name, start_time) is the
// receiver's to say.
func Parse(data []byte) (Document, error) {
	var doc Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return Document{}, err
	}
	doc.Raw = json.RawMessage(bytes.Clone(data))
	fillNested(&doc)
	return doc, nil
}

// fillNested gives nested subsegments the trace and parent ids that their
// position in the document implies, and their own Raw.
func fillNested(parent *Document) {
	if len(parent.Subsegments) == 0 {
		return
	}
	var raw struct {
		Subsegments []json.RawMessage `json:"subsegments"`
	}
	_ = json.Unmarshal(parent.Raw, &raw)
	for i := range parent.Subsegments {
		sub := &parent.Subsegments[i]
		if sub.TraceID == "" {
			sub.TraceID = parent.TraceID
		}
		if sub.ParentID == "" {
			sub.ParentID = parent.ID
		}
		if i < len(raw.Subsegments) {
			sub.Raw = raw.Subsegments[i]
		}
		fillNested(sub)
	}
}

// Flatten appends doc and the subsegments nested in it, depth first.
func Flatten(dst []Document, doc Document) []Document {
	dst = append(dst, doc)
	for _, sub := range doc.Subsegments {
		dst = Flatten(dst, sub)
	}
	return dst
}
