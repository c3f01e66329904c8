// Package s3probe is a tool that calls S3 from inside its function, as a
// tool storing a large result will: through the AWS SDK configured from
// the environment Lambda gives it (AWS_ENDPOINT_URL_S3, AWS_CA_BUNDLE,
// its role's credentials) and MCPFN_PAYLOADS_BUCKET. It runs only locally,
// as an ExtraFunctions fixture (function/ is its Lambda main), and answers
// S3's error code instead of failing, so a test reads what S3 said.
package s3probe

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/adapter"
)

// Name is the tool's name: its payloads are under "s3probe/".
const Name = "s3probe"

// Input is one S3 call: op "put" (Data under Key) or "get" (Key, at
// VersionID when set).
type Input struct {
	Op        string `json:"op" jsonschema:"put or get"`
	Key       string `json:"key"`
	Data      string `json:"data,omitempty"`
	VersionID string `json:"versionId,omitempty"`
}

// Output is S3's answer: Code "ok" or its error code; what it returned.
type Output struct {
	Code      string `json:"code"`
	Message   string `json:"message,omitempty"`
	VersionID string `json:"versionId,omitempty"`
	Data      string `json:"data,omitempty"`
	// SHA256 is the checksum S3 verified (put) or returned (get).
	SHA256 string `json:"sha256,omitempty"`
}

// Client is the function's S3 client and bucket.
type Client struct {
	s3     *s3.Client
	bucket string
}

// New builds the client from the function's environment.
func New(ctx context.Context) (*Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return &Client{
		s3:     s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = os.Getenv("AWS_S3_USE_PATH_STYLE") == "true" }),
		bucket: os.Getenv("MCPFN_PAYLOADS_BUCKET"),
	}, nil
}

// Declared is the tool.
var Declared = adapter.Declare(adapter.ToolDef[Input, Output]{
	Name:        Name,
	Description: "Test fixture: calls S3 from its function. Local stack only.",
}, handle)

func handle(c *Client, ctx context.Context, _ *adapter.Call, in Input) (Output, error) {
	switch in.Op {
	case "put":
		out, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(c.bucket), Key: aws.String(in.Key), Body: strings.NewReader(in.Data),
			ChecksumAlgorithm: types.ChecksumAlgorithmSha256, ContentType: aws.String("text/plain"),
		})
		if err != nil {
			return failed(err), nil
		}
		return Output{Code: "ok", VersionID: aws.ToString(out.VersionId), SHA256: aws.ToString(out.ChecksumSHA256)}, nil
	case "get":
		get := &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(in.Key), ChecksumMode: types.ChecksumModeEnabled}
		if in.VersionID != "" {
			get.VersionId = aws.String(in.VersionID)
		}
		out, err := c.s3.GetObject(ctx, get)
		if err != nil {
			return failed(err), nil
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			return failed(err), nil
		}
		sum := sha256.Sum256(b)
		if got := base64.StdEncoding.EncodeToString(sum[:]); aws.ToString(out.ChecksumSHA256) != got {
			return Output{Code: "checksum", Message: "S3 returned checksum " + aws.ToString(out.ChecksumSHA256) + ", the bytes' is " + got}, nil
		}
		return Output{Code: "ok", VersionID: aws.ToString(out.VersionId), Data: string(b), SHA256: aws.ToString(out.ChecksumSHA256)}, nil
	}
	return Output{}, adapter.NewError(adapter.CodeValidation, "op is put or get")
}

func failed(err error) Output {
	var api smithy.APIError
	if errors.As(err, &api) {
		return Output{Code: api.ErrorCode(), Message: api.ErrorMessage()}
	}
	return Output{Code: "error", Message: err.Error()}
}
