// Package claimtest is an in-process payloads bucket for the claim check's
// unit tests: the S3 stand-in (internal/s3standin, which checks no
// signature) on an httptest server, one versioned bucket, and an S3 client
// on it.
package claimtest

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/internal/s3standin"
)

// Bucket is the test bucket's name.
const Bucket = "payloads"

// Store starts a stand-in with Bucket (versioned) for the test's life and
// returns a Store on it (presigning too) and its client.
func Store(t testing.TB) (*claimcheck.Store, *s3.Client) {
	t.Helper()
	s, c, _ := Start(t)
	return s, c
}

// Start is Store, and the stand-in's URL (path-style, plain HTTP).
func Start(t testing.TB) (*claimcheck.Store, *s3.Client, string) {
	t.Helper()
	st, err := s3standin.New(filepath.Join(t.TempDir(), "s3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.CreateBucket(Bucket, "Enabled"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st.Handler())
	t.Cleanup(srv.Close)
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
	return claimcheck.FromClient(Bucket, c), c, srv.URL
}
