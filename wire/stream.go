package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A streamed answer (an envelope with Stream set, read through
// InvokeWithResponseStream) is newline-delimited JSON: zero or more frames,
// each one line, then, as its last line, the response payload the function
// would have answered without streaming — byte for byte. A one-line stream
// is therefore exactly an unstreamed answer, and a reader of streams reads
// the answer of a function that ignored Stream too.
//
//	{"frame":"progress","progress":0,"total":100,"message":"page 1"}
//	{"frame":"log","level":"info","logger":"digest","data":"fetched 50"}
//	{"mcpfn":"1","callId":"…","result":{…}}

// EnvLocalStreamURL is set by the local stack only (never on AWS, where the
// response stream itself is incremental): the emulator buffers a streamed
// response whole, so a function also POSTs each frame, as it writes it, to
// <EnvLocalStreamURL>/<Lambda request id>?offset=<byte offset of the frame
// in the stream>, body = the frame's line (newline included), in stream
// order, one request at a time. The final payload is not copied: it arrives
// with the emulator's buffered response, whose bytes after the last copied
// frame are the rest of the stream.
const EnvLocalStreamURL = "MCPFN_LOCAL_STREAM_URL"

// Frame kinds.
const (
	FrameProgress = "progress"
	FrameLog      = "log"
)

// MaxStreamLineBytes bounds one line of a stream: a little more than
// Lambda's 6 MB synchronous response, the largest final payload.
const MaxStreamLineBytes = 7 << 20

// Frame is one line of a stream before its last: a progress notification
// or a log message the gateway relays to the client while the call runs.
type Frame struct {
	Kind string `json:"frame"`

	// Progress frames (notifications/progress): Progress is always
	// present; Total is left out when unknown.
	Progress *float64 `json:"progress,omitempty"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`

	// Log frames (notifications/message).
	Level  string          `json:"level,omitempty"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// ProgressFrame is a progress frame; a total ≤ 0 means unknown.
func ProgressFrame(progress, total float64, message string) Frame {
	f := Frame{Kind: FrameProgress, Progress: &progress, Message: message}
	if total > 0 {
		f.Total = &total
	}
	return f
}

// LogFrame is a log frame; data is any JSON value.
func LogFrame(level, logger string, data json.RawMessage) Frame {
	return Frame{Kind: FrameLog, Level: level, Logger: logger, Data: data}
}

// StreamWriter writes a stream. Each frame and the final payload reach the
// underlying writer in one Write call, so a writer that flushes per write
// (a pipe into the Lambda runtime's chunked response) sends them one by
// one. It is not safe for concurrent use.
type StreamWriter struct {
	w     io.Writer
	ended bool
}

// NewStreamWriter returns a writer of a stream onto w.
func NewStreamWriter(w io.Writer) *StreamWriter { return &StreamWriter{w: w} }

// errStreamEnded: nothing follows the final payload.
var errStreamEnded = errors.New("wire: the stream has ended")

// Frame writes one frame.
func (s *StreamWriter) Frame(f Frame) error {
	if s.ended {
		return errStreamEnded
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	_, err = s.w.Write(append(b, '\n'))
	return err
}

// Final writes the response payload as the stream's last line and ends the
// stream. A payload spread over lines is compacted onto one.
func (s *StreamWriter) Final(payload []byte) error {
	if s.ended {
		return errStreamEnded
	}
	s.ended = true
	line := bytes.TrimSpace(payload)
	if bytes.ContainsAny(line, "\r\n") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, line); err != nil {
			return err
		}
		line = buf.Bytes()
	}
	_, err := s.w.Write(append(line[:len(line):len(line)], '\n'))
	return err
}

// StreamReader reads a stream.
type StreamReader struct {
	r     *bufio.Reader
	ended bool
}

// NewStreamReader returns a reader of the stream r.
func NewStreamReader(r io.Reader) *StreamReader {
	return &StreamReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the stream's next line: a frame, or the final payload (then
// frame is nil). After the final payload it returns io.EOF; a stream that
// ends without one is io.ErrUnexpectedEOF. Frames of a kind this module
// does not know are returned as they are, for the reader to skip.
func (s *StreamReader) Next() (frame *Frame, final json.RawMessage, err error) {
	for {
		if s.ended {
			if line, err := s.line(); err == nil && len(line) > 0 {
				return nil, nil, errors.New("wire: data after the stream's final payload")
			}
			return nil, nil, io.EOF
		}
		line, err := s.line()
		if len(line) == 0 {
			if err == nil {
				continue // a blank line
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
		var probe struct {
			Kind *string `json:"frame"`
		}
		if len(line) > 0 && line[0] == '{' {
			_ = json.Unmarshal(line, &probe)
		}
		if probe.Kind == nil {
			s.ended = true
			return nil, json.RawMessage(line), nil
		}
		var f Frame
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, nil, fmt.Errorf("wire: malformed stream frame: %w", err)
		}
		return &f, nil, nil
	}
}

// line reads one line without its end, at most MaxStreamLineBytes.
func (s *StreamReader) line() ([]byte, error) {
	var out []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(out)+len(chunk) > MaxStreamLineBytes {
			return nil, fmt.Errorf("wire: a stream line exceeds %d bytes", MaxStreamLineBytes)
		}
		out = append(out, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSpace(out), err
	}
}
