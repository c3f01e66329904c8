package mcpfntest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/mcpfntest"
)

func s3Code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// TestS3KeepsVersionsAsTheTemplateDeclares: a bucket of the template comes
// with its versioning (the payloads bucket's: enabled), each write a version
// of its own that a read by version still returns after the key is
// overwritten and hidden.
func TestS3KeepsVersionsAsTheTemplateDeclares(t *testing.T) {
	srv := mcpfntest.S3(t)
	c, bucket := srv.Client(), srv.Bucket(t, "PayloadsBucket")
	if !strings.HasPrefix(bucket, "payloadsbucket-") || srv.Bucket(t, "PayloadsBucket") == bucket {
		t.Fatalf("bucket names %q", bucket)
	}
	put := func(body string) string {
		t.Helper()
		sum := sha256.Sum256([]byte(body))
		out, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: strings.NewReader(body),
			ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.VersionId) == "" {
			t.Fatal("no version id from a versioned bucket")
		}
		return aws.ToString(out.VersionId)
	}
	get := func(version string) (string, error) {
		t.Helper()
		in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")}
		if version != "" {
			in.VersionId = aws.String(version)
		}
		out, err := c.GetObject(t.Context(), in)
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return string(b), err
	}
	v1 := put("first")
	put("second")
	if got, err := get(""); got != "second" || err != nil {
		t.Fatalf("current: %q, %v", got, err)
	}
	if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	// Hidden behind a delete marker: a caller that may not list is told
	// nothing but 403; the version is still there.
	if _, err := get(""); s3Code(err) != "AccessDenied" {
		t.Fatalf("a deleted key: %v, want AccessDenied", err)
	}
	if got, err := get(v1); got != "first" || err != nil {
		t.Fatalf("version 1: %q, %v", got, err)
	}
}

// TestS3ChecksBodies: a body whose checksum is not the one sent is refused
// and not stored, as S3 refuses it.
func TestS3ChecksBodies(t *testing.T) {
	srv := mcpfntest.S3(t)
	c, bucket := srv.Client(), srv.Bucket(t, "PayloadsBucket")
	wrong := sha256.Sum256([]byte("other bytes"))
	_, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: bytes.NewReader([]byte("these bytes")),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(wrong[:]))})
	if err == nil {
		t.Fatal("a body with the wrong SHA-256 was stored")
	}
	if _, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")}); err == nil {
		t.Fatal("the refused body can be read")
	}
}
