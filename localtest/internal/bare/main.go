// Command bare is a bare aws-lambda-go function that echoes its payload: the
// baseline the local stack's cold-start measurement and `make bench-lambda`
// (bench/lambda) compare a tool function against (docs/benchmarks.md).
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
}
