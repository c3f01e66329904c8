package gateway

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
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
