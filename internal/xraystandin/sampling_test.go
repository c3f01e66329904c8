package xraystandin_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/strategy/sampling"
	"github.com/aws/aws-xray-sdk-go/xray"

	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

// With ServeSampling, the SDK's default (centralized) strategy fetches the
// stand-in's rule and samples every segment; its fallback would sample about
// one of these thirty.
func TestSDKCentralizedSamplingSamplesEverything(t *testing.T) {
	d := listen(t)
	if err := d.ServeSampling("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	addr := d.DaemonAddress()
	if !strings.HasPrefix(addr, "tcp:127.0.0.1:") || !strings.Contains(addr, " udp:"+d.Addr()) {
		t.Fatalf("DaemonAddress() = %q", addr)
	}
	central, err := sampling.NewCentralizedStrategy()
	if err != nil {
		t.Fatal(err)
	}
	if err := xray.Configure(xray.Config{DaemonAddr: addr, SamplingStrategy: central}); err != nil {
		t.Fatal(err)
	}

	// The strategy starts polling on its first decision and fetches rules
	// on a goroutine of its own, over a real socket (so no synctest: a
	// bubble cannot wait on network I/O). A warm-up decision starts it; the
	// stand-in says when it answered; the SDK then installs the rule without
	// further I/O, which the first decision that names a rule shows.
	req := &sampling.Request{}
	_ = central.ShouldTrace(req)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a safety net, not a timing assertion
	defer cancel()
	select {
	case <-d.RulesServed():
	case <-ctx.Done():
		t.Fatal("the SDK never asked the stand-in for sampling rules")
	}
	for central.ShouldTrace(req).Rule == nil {
		if ctx.Err() != nil {
			t.Fatal("the SDK never installed the stand-in's rule")
		}
		runtime.Gosched()
	}
	d.Reset()

	const n = 30
	for i := range n {
		_, seg := xray.BeginSegment(context.Background(), "sampled")
		if !seg.Sampled {
			t.Fatalf("segment %d not sampled", i)
		}
		seg.Close(nil)
	}
	// Every one of them reaches the daemon.
	got := 0
	if _, err := d.WaitFor(ctx, func(doc xraystandin.Document) bool {
		if doc.Name == "sampled" {
			got++
		}
		return got == n
	}); err != nil {
		t.Fatalf("%d of %d sampled segments received: %v", got, n, err)
	}
}
