package adapter

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/wire"
)

// LOCAL STACK ONLY. The Lambda Runtime Interface Emulator buffers a
// function's streamed response whole (docs/long-running.md), so on the
// local stack a stream's frames would reach the gateway all at once, with
// the result. Where MCPFN_LOCAL_STREAM_URL is set — the local stack sets
// it, AWS never does — every frame written to the stream is also POSTed, in
// order, to <MCPFN_LOCAL_STREAM_URL>/<Lambda request id>?offset=<byte
// offset of the frame in the stream>, and the local stack's streaming
// invoke relays those copies as they come. The bytes of the stream itself
// are the same as on AWS.

// localTee returns w, or, when EnvLocalStreamURL is set, w teed to it.
func localTee(ctx context.Context, lc *lambdacontext.LambdaContext, w io.Writer, logf func(string, ...any)) io.Writer {
	base := os.Getenv(wire.EnvLocalStreamURL)
	if base == "" || lc == nil || lc.AwsRequestID == "" {
		return w
	}
	return &teeWriter{ctx: context.WithoutCancel(ctx), w: w, url: base + "/" + url.PathEscape(lc.AwsRequestID), logf: logf}
}

type teeWriter struct {
	ctx    context.Context
	w      io.Writer
	url    string
	off    int64
	failed bool
	logf   func(string, ...any)
}

// teeClient bounds each copy: a local stack that stopped listening must not
// hold the function up.
var teeClient = &http.Client{Timeout: 2 * time.Second}

// Write writes p to the stream, then POSTs a copy of it (frames only: the
// final payload reaches the local stack through the emulator).
func (t *teeWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	off := t.off
	t.off += int64(n)
	if err != nil || t.failed || !bytes.HasPrefix(p, []byte(`{"frame":`)) {
		return n, err
	}
	req, rerr := http.NewRequestWithContext(t.ctx, http.MethodPost, t.url+"?offset="+strconv.FormatInt(off, 10), bytes.NewReader(p[:n]))
	if rerr == nil {
		req.Header.Set("Content-Type", "application/x-ndjson")
		var resp *http.Response
		if resp, rerr = teeClient.Do(req); rerr == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	if rerr != nil {
		// One failure stops the copies: the stream itself goes on.
		t.failed = true
		t.logf("mcpfn: local stream copy to %s: %v", wire.EnvLocalStreamURL, rerr)
	}
	return n, err
}
