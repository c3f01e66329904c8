package adapter_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// TestLocalStreamTeeCopiesEachFrame: with MCPFN_LOCAL_STREAM_URL set (the
// local stack only), every frame is also POSTed, in order, under the
// invocation's request id with its byte offset in the stream; the copies
// are exactly the stream's bytes at those offsets, and the final payload
// is not copied (it reaches the local stack through the emulator).
func TestLocalStreamTeeCopiesEachFrame(t *testing.T) {
	type copyOf struct {
		path   string
		offset int
		body   []byte
	}
	var (
		mu     sync.Mutex
		copies []copyOf
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		mu.Lock()
		copies = append(copies, copyOf{r.URL.Path, off, b})
		mu.Unlock()
	}))
	defer srv.Close()
	t.Setenv(wire.EnvLocalStreamURL, srv.URL+"/local/stream")

	fn := newFunction(pagesTool(t, nil), quietLogger())
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "req-tee-1", Timeout: 10 * time.Second})
	defer cancel()
	out, err := lambda.NewHandler(fn.Streaming()).Invoke(ctx, pagesEnvelope(t, "c-tee", pagesIn{Pages: 2}, &wire.StreamRequest{Progress: true}))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(copies) != 3 {
		t.Fatalf("%d copies, want the 3 frames", len(copies))
	}
	for _, c := range copies {
		if c.path != "/local/stream/req-tee-1" || !bytes.Equal(out[c.offset:c.offset+len(c.body)], c.body) || !bytes.HasPrefix(c.body, []byte(`{"frame":"progress"`)) {
			t.Fatalf("copy %s@%d %q does not match the stream", c.path, c.offset, c.body)
		}
	}
}
