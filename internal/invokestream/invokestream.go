// Package invokestream writes the HTTP response of Lambda's
// InvokeWithResponseStream as the AWS SDK reads it: an AWS event stream of
// PayloadChunk events, each the function's bytes as they came, then one
// InvokeComplete event saying whether the function failed. The local
// stack's Invoke API and in-process test Invoke APIs answer with it.
package invokestream

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/aws/smithy-go/eventstream"
)

// ContentType is the media type of an event stream response.
const ContentType = "application/vnd.amazon.eventstream"

// Writer writes one streamed answer. Each event is flushed at once, so a
// caller reads a chunk as soon as it is written. It is safe for concurrent
// use; events keep the order of the calls.
type Writer struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	enc *eventstream.Encoder
	err error
}

// Start sets the response's headers (the event stream content type, the
// executed version $LATEST); they are sent, with HTTP 200, with the first
// event. Not before: the AWS SDK (aws-sdk-go-v2 v1.48) can tear down the
// connection of a response whose headers arrive while it is still
// finishing the request (net/http's write loop then fails with EOF), and
// the first event comes once the function has run a little.
func Start(w http.ResponseWriter) *Writer {
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	return &Writer{w: w, enc: eventstream.NewEncoder()}
}

// Chunk writes p as one PayloadChunk event.
func (sw *Writer) Chunk(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	return sw.event("PayloadChunk", "application/octet-stream", p)
}

// Complete writes the InvokeComplete event that ends the stream; a
// function error has a non-empty code (Lambda's errorType, e.g.
// Sandbox.Timedout) and its details (the error message).
func (sw *Writer) Complete(errorCode, errorDetails string) error {
	body := map[string]string{}
	if errorCode != "" {
		body["ErrorCode"] = errorCode
		body["ErrorDetails"] = errorDetails
	}
	b, _ := json.Marshal(body)
	return sw.event("InvokeComplete", "application/json", b)
}

func (sw *Writer) event(kind, contentType string, payload []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.err != nil {
		return sw.err
	}
	var h eventstream.Headers
	h.Set(eventstream.MessageTypeHeader, eventstream.StringValue(eventstream.EventMessageType))
	h.Set(eventstream.EventTypeHeader, eventstream.StringValue(kind))
	h.Set(eventstream.ContentTypeHeader, eventstream.StringValue(contentType))
	if sw.err = sw.enc.Encode(sw.w, eventstream.Message{Headers: h, Payload: payload}); sw.err != nil {
		return sw.err
	}
	sw.flush()
	return nil
}

func (sw *Writer) flush() {
	if f, ok := sw.w.(http.Flusher); ok {
		f.Flush()
	}
}
