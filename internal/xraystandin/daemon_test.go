package xraystandin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

const hdr = `{"format": "json", "version": 1}` + "\n"

func listen(t *testing.T) *xraystandin.Daemon {
	t.Helper()
	d, err := xraystandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func send(t *testing.T, addr string, datagrams ...string) {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, p := range datagrams {
		if _, err := conn.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
}

// lockedBuffer is an io.Writer safe to read while the daemon writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func byName(name string) func(xraystandin.Document) bool {
	return func(d xraystandin.Document) bool { return d.Name == name }
}

func TestReceivesRawDatagrams(t *testing.T) {
	d := listen(t)
	var out lockedBuffer
	d.SetOutput(&out)

	segment := `{"trace_id":"1-5759e988-bd862e3fe1be46a994272793","id":"70de5b6f19ff9a0a","name":"tool-fn","start_time":1478293361.271,"end_time":1478293361.449,
	  "annotations":{"tool":"broadcast_get"},"metadata":{"mcpfn":{"callId":"c-1"}},
	  "subsegments":[{"id":"0c24d0a1a5b4b8f1","name":"nested","start_time":1478293361.3,"end_time":1478293361.4}]}`
	sub := `{"type":"subsegment","trace_id":"1-5759e988-bd862e3fe1be46a994272793","parent_id":"70de5b6f19ff9a0a","id":"53995c3f42cd8ad8","name":"mcpfn.call","start_time":1478293361.3,"in_progress":true}`
	send(t, d.Addr(),
		hdr+segment,
		"no header at all",
		`{"format":"json","version":2}`+"\n"+sub,
		`{"format":"xml","version":1}`+"\n"+sub,
		"{not json\n"+sub,
		hdr+"{truncated",
		hdr+`{"trace_id":"1-x-y","name":"no id","start_time":1}`,
		hdr+`{"id":"ab","name":"no trace","start_time":1}`,
		hdr+`[1,2,3]`,
		hdr+sub,
	)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got, err := d.WaitFor(ctx, byName("mcpfn.call"))
	if err != nil {
		t.Fatalf("WaitFor: %v (malformed %d, last: %s)", err, d.Malformed(), d.LastMalformed())
	}
	if got.Type != "subsegment" || got.ParentID != "70de5b6f19ff9a0a" || !got.InProgress || got.StartTime != 1478293361.3 {
		t.Errorf("subsegment parsed as %+v", got)
	}
	// Datagrams from one socket to loopback arrive in order, so everything
	// before the last valid one has been handled by now.
	if n := d.Malformed(); n != 8 {
		t.Errorf("Malformed() = %d, want 8 (last: %s)", n, d.LastMalformed())
	}
	docs := d.Documents()
	if len(docs) != 2 {
		t.Fatalf("Documents() has %d documents, want 2", len(docs))
	}
	seg := docs[0]
	if seg.ID != "70de5b6f19ff9a0a" || seg.TraceID != "1-5759e988-bd862e3fe1be46a994272793" || seg.Name != "tool-fn" ||
		seg.EndTime != 1478293361.449 || seg.Annotations["tool"] != "broadcast_get" {
		t.Errorf("segment parsed as %+v", seg)
	}
	if md, _ := seg.Metadata["mcpfn"].(map[string]any); md["callId"] != "c-1" {
		t.Errorf("metadata = %v", seg.Metadata)
	}
	if !json.Valid(seg.Raw) || bytes.Contains(seg.Raw, []byte("\n")) {
		t.Errorf("Raw is not one compact JSON document: %s", seg.Raw)
	}

	// Nested subsegments are reachable as entities, ids filled in.
	nested, err := d.WaitFor(ctx, byName("nested"))
	if err != nil {
		t.Fatal(err)
	}
	if nested.TraceID != seg.TraceID || nested.ParentID != seg.ID || !json.Valid(nested.Raw) {
		t.Errorf("nested subsegment = %+v", nested)
	}
	if n := len(d.Entities()); n != 3 {
		t.Errorf("Entities() has %d entries, want 3", n)
	}

	// One compact JSON line per accepted document, none for rejected ones.
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 {
		t.Fatalf("output has %d lines, want 2:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("output line is not JSON: %s", l)
		}
	}
	if lines[0] != string(seg.Raw) {
		t.Errorf("output line %s\nwant %s", lines[0], seg.Raw)
	}
}

// waiting returns a match for want that also closes its channel once it has
// been shown the entity named seen: from then on the WaitFor that calls it
// has looked at everything received so far and waits for what comes next.
// The tests order themselves on that event, never on a clock: the stand-in
// reads a real socket, which a testing/synctest bubble cannot wait on.
func waiting(want, seen string) (func(xraystandin.Document) bool, <-chan struct{}) {
	ready := make(chan struct{})
	var once sync.Once
	return func(d xraystandin.Document) bool {
		if d.Name == seen {
			once.Do(func() { close(ready) })
		}
		return d.Name == want
	}, ready
}

func TestWaitFor(t *testing.T) {
	d := listen(t)
	doc := func(name string) string {
		return hdr + `{"trace_id":"1-5759e988-bd862e3fe1be46a994272793","id":"70de5b6f19ff9a0a","name":"` + name + `","start_time":1}`
	}
	// A safety net for lost datagrams, not a timing assertion.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	wait := func(match func(xraystandin.Document) bool) <-chan error {
		got := make(chan error, 1)
		go func() {
			_, err := d.WaitFor(ctx, match)
			got <- err
		}()
		return got
	}

	// A match that arrives while WaitFor waits.
	send(t, d.Addr(), doc("first"))
	if _, err := d.WaitFor(ctx, byName("first")); err != nil {
		t.Fatal(err)
	}
	match, ready := waiting("later", "first")
	got := wait(match)
	<-ready
	send(t, d.Addr(), doc("later"))
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	// A match that arrived before WaitFor was called.
	if _, err := d.WaitFor(ctx, byName("first")); err != nil {
		t.Fatal(err)
	}

	// No match: the context ends the wait.
	never, cancelNever := context.WithCancel(ctx)
	match, ready = waiting("never", "later")
	go func() { <-ready; cancelNever() }()
	if _, err := d.WaitFor(never, match); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor without a match: %v, want Canceled", err)
	}

	// After Reset old documents are gone and new ones are still found.
	d.Reset()
	if n := len(d.Documents()); n != 0 {
		t.Fatalf("%d documents after Reset", n)
	}
	send(t, d.Addr(), doc("after-reset"))
	if _, err := d.WaitFor(ctx, byName("after-reset")); err != nil {
		t.Fatal(err)
	}

	// Close wakes waiters.
	match, ready = waiting("never", "after-reset")
	got = wait(match)
	<-ready
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, xraystandin.ErrClosed) {
		t.Fatalf("WaitFor across Close: %v, want ErrClosed", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestListenError(t *testing.T) {
	d := listen(t)
	if _, err := xraystandin.Listen(d.Addr()); err == nil {
		t.Fatal("Listen on a port in use succeeded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(hdr + `{"trace_id":"1-a-b","id":"1","name":"n","start_time":1,"subsegments":[{"id":"2","name":"s","start_time":1,"subsegments":[{}]}]}`))
	f.Add([]byte(hdr + `{"trace_id":"1-a-b","id":"1","name":"n","start_time":1,"annotations":{"a":1},"metadata":{"x":{"y":[1]}}}`))
	f.Add([]byte(hdr))
	f.Add([]byte("\n\n"))
	f.Add([]byte(hdr + `{"id":1}`))
	f.Fuzz(func(t *testing.T, datagram []byte) {
		d, ok := xraystandin.ParseForFuzz(datagram)
		if ok && (d.ID == "" || d.TraceID == "" || !json.Valid(d.Raw)) {
			t.Fatalf("accepted an invalid document: %+v", d)
		}
	})
}

// The output is the record and memory holds the latest documents only: a
// daemon that receives for hours holds what it held after a minute.
func TestMemoryHoldsTheLatestDocuments(t *testing.T) {
	d := listen(t)
	var out lockedBuffer
	d.SetOutput(&out)
	d.SetRetain(3)
	var datagrams []string
	for i := range 10 {
		datagrams = append(datagrams, hdr+`{"trace_id":"1-5759e988-bd862e3fe1be46a994272793","id":"70de5b6f19ff9a0`+string(rune('a'+i))+`","name":"doc-`+string(rune('a'+i))+`","start_time":1}`)
	}
	send(t, d.Addr(), datagrams...)
	// A safety net for lost datagrams, not a timing assertion.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := d.WaitFor(ctx, byName("doc-j")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, doc := range d.Documents() {
		names = append(names, doc.Name)
	}
	if strings.Join(names, " ") != "doc-h doc-i doc-j" {
		t.Errorf("held %v, want the latest three", names)
	}
	if n := strings.Count(out.String(), "\n"); n != 10 || d.Received() != 10 {
		t.Errorf("output has %d lines, Received %d: want every document, 10", n, d.Received())
	}
	// Documents that left memory are no longer matched; held ones are.
	never, cancelNever := context.WithCancel(ctx)
	cancelNever()
	if _, err := d.WaitFor(never, byName("doc-a")); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor of a document no longer held: %v", err)
	}
	if _, err := d.WaitFor(ctx, byName("doc-h")); err != nil {
		t.Error(err)
	}
}
