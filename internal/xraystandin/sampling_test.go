package xraystandin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/strategy/sampling"
	"github.com/aws/aws-xray-sdk-go/xray"
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
	// asynchronously; a warm-up segment triggers it.
	_, warm := xray.BeginSegment(context.Background(), "warm-up")
	warm.Close(nil)
	deadline := time.Now().Add(5 * time.Second)
	for d.SamplingRequests() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the SDK never asked the stand-in for sampling rules")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the SDK install the rule it received
	d.Reset()

	const n = 30
	for i := 0; i < n; i++ {
		_, seg := xray.BeginSegment(context.Background(), "sampled")
		seg.Close(nil)
	}
	sampled := func() int {
		c := 0
		for _, doc := range d.Documents() {
			if doc.Name == "sampled" {
				c++
			}
		}
		return c
	}
	deadline = time.Now().Add(5 * time.Second)
	for sampled() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d segments sampled", sampled(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
