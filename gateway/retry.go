package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go/middleware"
)

// invokeRetryer is the SDK retryer of every Invoke: InvokeAttempts attempts,
// short backoff (the caller is waiting), and, when onlyUnsent, retrying
// only failures that prove the function did not run (decision 0015).
func invokeRetryer(attempts int, onlyUnsent bool) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = attempts
		// The caller is waiting: retry a throttle or a 5xx soon or not at
		// all.
		o.MaxBackoff = 400 * time.Millisecond
		if onlyUnsent {
			o.Retryables = []retry.IsErrorRetryable{retry.IsErrorRetryableFunc(provenUnrun)}
		}
	})
}

// provenUnrun is the retry rule of a destructive, non-idempotent tool's
// Invoke: retry only when the failure proves Lambda did not run the
// function (a throttle, or a connection that was never made); answer "no"
// for everything else, including a 5xx, a reset or a timeout after the
// request was sent, where the first attempt may have taken effect.
func provenUnrun(err error) aws.Ternary {
	var tooMany *types.TooManyRequestsException
	var re *awshttp.ResponseError
	if errors.As(err, &tooMany) || (errors.As(err, &re) && re.HTTPStatusCode() == http.StatusTooManyRequests) {
		return aws.TrueTernary
	}
	if re != nil && re.HTTPStatusCode() != 0 {
		return aws.FalseTernary // an HTTP answer: the request arrived
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return aws.TrueTernary // refused or unreachable: nothing was sent
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return aws.TrueTernary
	}
	return aws.FalseTernary
}

// resendPolicy is the per-Invoke option that puts the never-resend retryer
// on a destructive, non-idempotent tool's calls; other tools keep the
// client's retryer.
func (g *Gateway) resendPolicy(onlyUnsent bool) func(*lambda.Options) {
	return func(o *lambda.Options) {
		if onlyUnsent {
			o.Retryer = g.unsentRetryer
		}
	}
}

// noteReached records, for every attempt of an Invoke (it sits inside the
// SDK's retry loop), whether that attempt may have reached the function:
// any failure but a refusal by Lambda (4xx) or a connection never made.
// The last attempt's error alone cannot say that an earlier one (a 5xx)
// did not run the function.
func noteReached(reached *bool) func(*middleware.Stack) error {
	mw := middleware.FinalizeMiddlewareFunc("mcpfnNoteReached",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			if err == nil || !refusedUnrun(err) {
				*reached = true
			}
			return out, md, err
		})
	return func(s *middleware.Stack) error {
		if _, ok := s.Finalize.Get("Retry"); !ok {
			return s.Finalize.Add(mw, middleware.After)
		}
		return s.Finalize.Insert(mw, "Retry", middleware.After)
	}
}

// refusedUnrun reports whether an Invoke error proves the function did not
// run: Lambda refused the request (4xx), or nothing was sent.
func refusedUnrun(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 {
		return true
	}
	return provenUnrun(err) == aws.TrueTernary
}
