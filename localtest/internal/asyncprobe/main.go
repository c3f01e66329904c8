// Command asyncprobe is a bare aws-lambda-go function for the local stack's
// tests of asynchronous invokes: it POSTs its request id to the URL in its
// payload's "notify" and fails (a function error) when the answer is
// "fail", so a test decides which attempt succeeds and sees each one.
package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type input struct {
	Notify string `json:"notify"`
}

func main() {
	lambda.Start(func(ctx context.Context, in input) (string, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		resp, err := http.Post(in.Notify, "text/plain", strings.NewReader(lc.AwsRequestID))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) == "fail" {
			return "", errors.New("asked to fail")
		}
		return "ok", nil
	})
}
