// Package xraystandin is a stand-in for the AWS X-Ray daemon: it receives the
// UDP datagrams that X-Ray SDKs emit and keeps the segment documents, so
// tests can assert on real spans and the local stack can write them to
// .local/xray.jsonl. It does not forward anything to AWS.
//
// The output is the record; memory holds only the latest documents
// (SetRetain, default 4,096), which is what tests wait on: a daemon that
// receives for hours holds what it held after a minute.
//
// The daemon protocol is one document per datagram: the header line
// {"format": "json", "version": 1}, a newline, then one segment or
// subsegment as JSON. Datagrams that break it are counted (Malformed), never
// fatal: a daemon must survive any client.
//
// The real daemon also proxies the X-Ray sampling API on TCP; ServeSampling
// answers it with one rule that samples everything, so that SDKs using the
// centralized sampling strategy (the Go SDK's default outside Lambda) trace
// every local request.
package xraystandin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/mcpfn/mcpfn/audit/xraydoc"
	"github.com/mcpfn/mcpfn/internal/recent"
)

// Document is one received segment or subsegment (package xraydoc says
// what it holds).
type Document = xraydoc.Document

// header is the first line of every datagram, as the SDKs write it.
type header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// maxDatagram is the largest UDP payload; the real daemon rejects segments
// over 64 KB, so nothing legitimate is larger.
const maxDatagram = 65535

// ErrClosed is returned by WaitFor once the daemon is closed and no
// received document matched.
var ErrClosed = errors.New("xraystandin: daemon closed")

// Daemon receives segment documents on a UDP socket.
type Daemon struct {
	conn *net.UDPConn
	done chan struct{} // closed when the read loop has ended

	mu sync.Mutex
	// docs are the latest documents received; the output has them all.
	docs      *recent.Window[Document]
	malformed int
	lastBad   string
	out       io.Writer
	// changed is closed and replaced whenever docs grows or the daemon
	// closes, waking every WaitFor without a goroutine per waiter.
	changed  chan struct{}
	closed   bool
	sampling *samplingServer // nil unless ServeSampling was called
}

// Listen opens the daemon on a UDP address such as "127.0.0.1:2000", or
// "127.0.0.1:0" for a free port (see Addr), and starts receiving.
func Listen(addr string) (*Daemon, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("xraystandin: %w", err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("xraystandin: %w", err)
	}
	// Bursts from many concurrent calls would otherwise overflow the
	// kernel's default socket buffer and be dropped silently. Best effort:
	// the kernel may cap it.
	_ = conn.SetReadBuffer(4 << 20)
	d := &Daemon{conn: conn, done: make(chan struct{}), changed: make(chan struct{}), docs: recent.New[Document](0)}
	go d.readLoop()
	return d, nil
}

// Addr is the address the daemon listens on, as "host:port" — the form
// xray.Config.DaemonAddr and AWS_XRAY_DAEMON_ADDRESS take.
func (d *Daemon) Addr() string { return d.conn.LocalAddr().String() }

// SetOutput makes the daemon append every document it accepts from now on
// to w, compacted to one JSON line. Nil stops the output. Write errors are
// ignored: losing the log must not stop the intake tests rely on.
func (d *Daemon) SetOutput(w io.Writer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.out = w
}

// SetRetain sets how many of the latest documents the daemon keeps in
// memory for Documents, Entities and WaitFor (n <= 0: the default, 4,096).
// Older ones are only in the output.
func (d *Daemon) SetRetain(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs.Resize(n)
}

// Received counts the documents accepted since Listen, whether or not
// they are still held.
func (d *Daemon) Received() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.docs.Next()
}

func (d *Daemon) readLoop() {
	defer close(d.done)
	buf := make([]byte, maxDatagram+1)
	for {
		n, _, err := d.conn.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP-triggered errors; the socket stays usable
		}
		d.receive(buf[:n])
	}
}

// receive records one datagram, or counts it as malformed.
func (d *Daemon) receive(datagram []byte) {
	doc, line, err := parseDatagram(datagram)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.malformed++
		d.lastBad = err.Error()
		return
	}
	d.docs.Add(doc)
	if d.out != nil {
		_, _ = d.out.Write(line)
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

// parseDatagram checks the header, parses the document and returns it with
// its compacted JSON line (newline-terminated) for the output. It is apart
// from the socket so the fuzz target can drive it directly.
func parseDatagram(datagram []byte) (Document, []byte, error) {
	if len(datagram) > maxDatagram {
		return Document{}, nil, errors.New("datagram exceeds 64 KB")
	}
	head, body, ok := bytes.Cut(datagram, []byte("\n"))
	if !ok {
		return Document{}, nil, errors.New("no header line")
	}
	var h header
	if err := json.Unmarshal(head, &h); err != nil {
		return Document{}, nil, fmt.Errorf("header: %w", err)
	}
	if h.Format != "json" || h.Version != 1 {
		return Document{}, nil, fmt.Errorf("header: format %q version %d, want json 1", h.Format, h.Version)
	}
	var line bytes.Buffer
	if err := json.Compact(&line, bytes.TrimSpace(body)); err != nil {
		return Document{}, nil, fmt.Errorf("document: %w", err)
	}
	doc, err := xraydoc.Parse(line.Bytes())
	if err != nil {
		return Document{}, nil, fmt.Errorf("document: %w", err)
	}
	// The fields X-Ray itself requires of every segment and subsegment.
	if doc.ID == "" || doc.Name == "" || doc.StartTime == 0 {
		return Document{}, nil, errors.New("document: id, name and start_time are required")
	}
	if doc.TraceID == "" {
		return Document{}, nil, errors.New("document: trace_id is required at the top level")
	}
	line.WriteByte('\n')
	return doc, line.Bytes(), nil
}

// Documents returns the documents held (the latest received, see
// SetRetain), in arrival order, as sent (nested subsegments stay inside
// their parent; see Entities).
func (d *Daemon) Documents() []Document {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.docs.All()
}

// Entities returns every segment and subsegment of the documents held: each
// document followed by the subsegments nested in it, depth first. Whether an
// SDK sends a subsegment on its own or inside its parent is its choice (the
// Go SDK nests completed subsegments when the segment closes, streams them
// when there are many), so assertions about spans should look here.
func (d *Daemon) Entities() []Document {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []Document
	for _, doc := range d.docs.All() {
		all = xraydoc.Flatten(all, doc)
	}
	return all
}

// Malformed counts the datagrams rejected so far.
func (d *Daemon) Malformed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.malformed
}

// LastMalformed says why the latest malformed datagram was rejected, for
// test failure messages; empty if none was.
func (d *Daemon) LastMalformed() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastBad
}

// Reset forgets the documents and the malformed count, so one daemon can
// serve several tests that each look only at their own spans.
func (d *Daemon) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs.Reset()
	d.malformed = 0
	d.lastBad = ""
}

// WaitFor returns the first entity (see Entities: documents and the
// subsegments nested in them) for which match is true, waiting for new
// datagrams until ctx is done or the daemon is closed. Entities received
// before the call count as long as the daemon still holds them (the latest
// SetRetain documents), so there is no race with a sender that was faster
// than the test.
func (d *Daemon) WaitFor(ctx context.Context, match func(Document) bool) (Document, error) {
	var seen uint64
	for {
		d.mu.Lock()
		docs, next, _ := d.docs.Since(seen)
		seen = next
		changed, closed := d.changed, d.closed
		d.mu.Unlock()
		for _, doc := range docs {
			for _, e := range xraydoc.Flatten(nil, doc) {
				if match(e) {
					return e, nil
				}
			}
		}
		if closed {
			return Document{}, ErrClosed
		}
		select {
		case <-ctx.Done():
			return Document{}, fmt.Errorf("xraystandin: no matching segment: %w", ctx.Err())
		case <-changed:
		}
	}
}

// Close stops receiving, stops the sampling API if it runs, and releases
// the sockets. Documents stay readable.
func (d *Daemon) Close() error {
	err := d.conn.Close()
	<-d.done
	d.mu.Lock()
	sampling := d.sampling
	if !d.closed {
		d.closed = true
		close(d.changed)
		d.changed = make(chan struct{})
	}
	d.mu.Unlock()
	if sampling != nil {
		sampling.close()
	}
	if errors.Is(err, net.ErrClosed) {
		return nil // already closed: Close is idempotent
	}
	return err
}
