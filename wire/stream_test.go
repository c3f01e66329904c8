package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/wire"
)

// TestStreamRoundTrips: frames then the final payload, as written, are read
// back in order; the progress 0 frame keeps its progress, an unknown total
// is left out, and the final line is the payload byte for byte.
func TestStreamRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	w := wire.NewStreamWriter(&buf)
	final := []byte(`{"mcpfn":"1","callId":"c-1","result":{"content":[]}}`)
	for _, f := range []wire.Frame{
		wire.ProgressFrame(0, 100, "start"),
		wire.LogFrame("info", "digest", json.RawMessage(`{"page":1}`)),
		wire.ProgressFrame(3, 0, ""),
	} {
		if err := w.Frame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Final(final); err != nil {
		t.Fatal(err)
	}
	if err := w.Frame(wire.ProgressFrame(1, 1, "")); err == nil {
		t.Fatal("a frame after the final payload was written")
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		`{"frame":"progress","progress":0,"total":100,"message":"start"}`,
		`{"frame":"log","level":"info","logger":"digest","data":{"page":1}}`,
		`{"frame":"progress","progress":3}`,
		string(final),
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stream:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}

	r := wire.NewStreamReader(&buf)
	var kinds []string
	for {
		f, fin, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if f != nil {
			kinds = append(kinds, f.Kind)
			continue
		}
		if !bytes.Equal(fin, final) {
			t.Fatalf("final = %s", fin)
		}
		kinds = append(kinds, "final")
	}
	if strings.Join(kinds, ",") != "progress,log,progress,final" {
		t.Fatalf("read %v", kinds)
	}
}

// TestStreamReaderReadsAnUnstreamedAnswer: a function that ignored Stream
// answered one JSON payload without a newline: that is a one-line stream.
func TestStreamReaderReadsAnUnstreamedAnswer(t *testing.T) {
	r := wire.NewStreamReader(strings.NewReader(`{"mcpfn":"1","result":{}}`))
	f, fin, err := r.Next()
	if err != nil || f != nil || string(fin) != `{"mcpfn":"1","result":{}}` {
		t.Fatalf("Next = %v, %s, %v", f, fin, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the final: %v", err)
	}
}

// TestStreamReaderRefusesATruncatedStream: frames with no final payload
// (the function died mid-stream) are an unexpected EOF, never a result.
func TestStreamReaderRefusesATruncatedStream(t *testing.T) {
	r := wire.NewStreamReader(strings.NewReader(`{"frame":"progress","progress":1}` + "\n"))
	if f, _, err := r.Next(); err != nil || f == nil {
		t.Fatalf("first frame: %v, %v", f, err)
	}
	if _, _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated stream: %v", err)
	}
	r = wire.NewStreamReader(strings.NewReader("{\"mcpfn\":\"1\"}\n{\"mcpfn\":\"1\"}\n"))
	_, _, _ = r.Next()
	if _, _, err := r.Next(); err == nil || err == io.EOF {
		t.Fatalf("a second final payload: %v", err)
	}
}
