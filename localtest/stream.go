package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpfn/mcpfn/internal/invokestream"
	"github.com/mcpfn/mcpfn/wire"
)

// InvokeWithResponseStream on the local stack (docs/local.md).
//
// The emulator buffers a function's streamed response whole and has no
// streaming route, so the router serves the route itself and is fed by the
// function: where MCPFN_LOCAL_STREAM_URL is set (the stack sets it for
// every function) the adapter POSTs a copy of each frame it streams, with
// the frame's byte offset, to <Invoke API>/local/stream/<request id>. The
// router relays each copy at once as a PayloadChunk; when the emulator's
// buffered answer arrives it checks that the relayed bytes are its prefix
// and sends only the rest, then InvokeComplete. The caller thus reads
// exactly the bytes the function streamed, frames as they happened.

// localStreamPrefix is the path of the frames' copies on the Invoke API.
const localStreamPrefix = "/local/stream/"

// streams are the streamed invokes in flight, by request id.
type streams struct {
	mu sync.Mutex
	m  map[string]*liveStream
}

// liveStream is one streamed invoke. The frames' copies reach its handler
// (serveStream), the only writer of the response, through copies; each
// copy is acknowledged once written, so the frames keep their order and
// are all relayed before the function can answer.
type liveStream struct {
	copies chan frameCopy
	done   chan struct{}
}

type frameCopy struct {
	offset int
	data   []byte
	ack    chan struct{}
}

func (ss *streams) open(id string) *liveStream {
	ls := &liveStream{copies: make(chan frameCopy), done: make(chan struct{})}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[string]*liveStream{}
	}
	ss.m[id] = ls
	return ls
}

func (ss *streams) close(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ls := ss.m[id]; ls != nil {
		close(ls.done)
		delete(ss.m, id)
	}
}

// receive hands a frame's copy to its stream.
func (ss *streams) receive(w http.ResponseWriter, r *http.Request, id string) {
	ss.mu.Lock()
	ls := ss.m[id]
	ss.mu.Unlock()
	if r.Method != http.MethodPost || ls == nil {
		http.Error(w, "no streamed invoke "+id+" in flight", http.StatusNotFound)
		return
	}
	off, err := strconv.Atoi(r.URL.Query().Get("offset"))
	body, rerr := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxStreamLineBytes))
	if err != nil || rerr != nil {
		http.Error(w, "a frame's copy needs ?offset= and a body", http.StatusBadRequest)
		return
	}
	c := frameCopy{offset: off, data: body, ack: make(chan struct{})}
	select {
	case ls.copies <- c:
		<-c.ack
	case <-ls.done:
	}
	w.WriteHeader(http.StatusNoContent)
}

// serveStream answers InvokeWithResponseStream: the event stream's headers
// at once, the function's frames as the tee relays them, then the rest of
// its answer and InvokeComplete. A copy out of order (not at the offset
// relayed so far) is left to the answer.
func (rt router) serveStream(ctx context.Context, w http.ResponseWriter, fn *function, e *emulator, body []byte, h http.Header) {
	id := h.Get("X-Amzn-RequestId")
	ls := rt.s.streams.open(id)
	defer rt.s.streams.close(id)
	sw := invokestream.Start(w)
	type answer struct {
		out   []byte
		fnErr string
		err   error
	}
	answered := make(chan answer, 1)
	go func() {
		out, fnErr, err := rt.call(ctx, fn, e, body, h)
		answered <- answer{out, fnErr, err}
	}()
	var sent []byte
	for {
		select {
		case c := <-ls.copies:
			if c.offset == len(sent) && sw.Chunk(c.data) == nil {
				sent = append(sent, c.data...)
			}
			close(c.ack)
		case a := <-answered:
			switch {
			case a.err != nil:
				_ = sw.Complete("ServiceException", a.err.Error())
			case a.fnErr != "":
				var fe struct{ ErrorType, ErrorMessage string }
				_ = json.Unmarshal(a.out, &fe)
				_ = sw.Complete(fe.ErrorType, fe.ErrorMessage)
			case !bytes.HasPrefix(a.out, sent):
				// The tee sent bytes the function's answer does not start
				// with: a bug of the tee, which must not pass silently.
				msg := fmt.Sprintf("the relayed frames (%d bytes) are not the start of the function's answer (%d bytes)", len(sent), len(a.out))
				rt.s.logRouter("function", fn.spec.Name, "requestId", id, "error", msg)
				_ = sw.Complete("Local.StreamMismatch", msg)
			default:
				_ = sw.Chunk(a.out[len(sent):])
				_ = sw.Complete("", "")
			}
			return
		}
	}
}

// streamURL is the MCPFN_LOCAL_STREAM_URL of the stack's functions.
func (s *Stack) streamURL() string { return s.invokeURL + strings.TrimSuffix(localStreamPrefix, "/") }
