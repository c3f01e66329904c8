// Package ddbcrc validates the CRC32 of DynamoDB responses that carry one,
// and only those: give a tool's DynamoDB client [Option] when it may talk to
// DynamoDB Local (mcpfn local, mcpfntest), as the demo's store does.
//
// The DynamoDB client of aws-sdk-go-v2 (service/dynamodb v1.74.0,
// internal/customizations/checksum.go) wraps every response body in a CRC32
// check against the X-Amz-Crc32 header, and when the header is absent it
// checks against 0. DynamoDB sends the header on every response; DynamoDB
// Local sends it on successes but not on error responses, so every lost
// conditional write (ConditionalCheckFailedException: a retried call, a
// replayed row that is already there) ended with the SDK logging "failed to
// close HTTP response body …: response did not match expected checksum, 0,
// …" although nothing was wrong.
//
// [Option] replaces the SDK's check with one that validates exactly when
// the header is there: the same protection against DynamoDB, no false alarm
// against DynamoDB Local, and the SDK's logger left as it is.
package ddbcrc

import (
	"context"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Option configures a DynamoDB client to validate response CRC32 checksums
// only where the response carries one. Pass it to dynamodb.New or
// dynamodb.NewFromConfig.
func Option(o *dynamodb.Options) {
	o.DisableValidateResponseChecksum = true
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		// Deserialize.Add(After) puts it next to the transport, where the
		// SDK's own check sits: it wraps the raw body before the operation
		// deserializer reads it.
		return s.Deserialize.Add(checksum{}, middleware.After)
	})
}

type checksum struct{}

func (checksum) ID() string { return "mcpfn:DynamoDBResponseCRC32WhenSent" }

func (checksum) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok {
		return out, md, err
	}
	v := resp.Header.Get("X-Amz-Crc32")
	if v == "" {
		return out, md, nil // nothing to validate against
	}
	want, perr := strconv.ParseUint(v, 10, 32)
	if perr != nil {
		return out, md, &smithy.DeserializationError{Err: fmt.Errorf("unable to parse checksum header %q: %w", v, perr)}
	}
	h := crc32.NewIEEE()
	resp.Body = &validating{Reader: io.TeeReader(resp.Body, h), closer: resp.Body, want: uint32(want), hash: h}
	return out, md, nil
}

// validating checks the CRC32 of everything read when it is closed, as the
// SDK's own check does (the SDK drains the body before closing it).
type validating struct {
	io.Reader
	closer io.Closer
	want   uint32
	hash   hash.Hash32
}

func (v *validating) Close() error {
	err := v.closer.Close()
	if got := v.hash.Sum32(); got != v.want {
		return fmt.Errorf("response did not match expected checksum, %d, %d", v.want, got)
	}
	return err
}
