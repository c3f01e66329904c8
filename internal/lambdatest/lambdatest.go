// Package lambdatest builds the context aws-lambda-go's runtime loop gives a
// handler for one invocation — the deadline, the lambdacontext facts and the
// invocation's X-Ray header under the key the runtime uses — so tests drive a
// function's real entry point the way Lambda does. One place knows how the
// runtime builds it; every test that invokes a handler uses it.
package lambdatest

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/wire"
)

// Invocation describes one invocation as the Runtime API delivers it.
type Invocation struct {
	RequestID   string
	FunctionARN string        // default arn:aws:lambda:us-east-1:123456789012:function:test
	Trace       string        // Lambda-Runtime-Trace-Id; "" = none
	Timeout     time.Duration // deadline from now; 0 = none
	Custom      map[string]string
	Client      *lambdacontext.ClientContext // whole client context; overrides Custom
	TenantID    string
}

// Context returns parent extended as the runtime loop extends it for inv.
// Call cancel when the invocation is over.
func Context(parent context.Context, inv Invocation) (ctx context.Context, cancel context.CancelFunc) {
	ctx, cancel = parent, func() {}
	if inv.Timeout > 0 {
		ctx, cancel = context.WithDeadline(parent, time.Now().Add(inv.Timeout))
	}
	if inv.FunctionARN == "" {
		inv.FunctionARN = "arn:aws:lambda:us-east-1:123456789012:function:test"
	}
	lc := &lambdacontext.LambdaContext{AwsRequestID: inv.RequestID, InvokedFunctionArn: inv.FunctionARN, TenantID: inv.TenantID}
	switch {
	case inv.Client != nil:
		lc.ClientContext = *inv.Client
	case inv.Custom != nil:
		lc.ClientContext.Custom = inv.Custom
	}
	ctx = lambdacontext.NewContext(ctx, lc)
	//lint:ignore SA1029 the plain string key is the one aws-lambda-go itself sets
	ctx = context.WithValue(ctx, wire.TraceHeaderKey, inv.Trace)
	return ctx, cancel
}
