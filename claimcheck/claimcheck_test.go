package claimcheck_test

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/internal/claimtest"
	"github.com/mcpfn/mcpfn/wire"
)

// TestAStoredObjectIsReadOnlyAsItsReferenceSays: what Put stores, Read
// returns and Check accepts; a reference whose size or SHA-256 is not the
// version's is Tampered, a version that is not there Missing, a reference
// above the reader's limit Refused before anything is read.
func TestAStoredObjectIsReadOnlyAsItsReferenceSays(t *testing.T) {
	s, c := claimtest.Store(t)
	ctx := t.Context()
	body := bytes.Repeat([]byte("claim check "), 1000)
	ref, err := s.Put(ctx, "t/results/c1/a1", claimcheck.JSON, body)
	if err != nil {
		t.Fatal(err)
	}
	if ref.VersionID == "" || ref.Size != int64(len(body)) || ref.ContentType != claimcheck.JSON || ref.Bucket != claimtest.Bucket {
		t.Fatalf("ref = %+v", ref)
	}
	got, err := s.Read(ctx, &ref, 0)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Read: %d bytes, %v", len(got), err)
	}
	if err := s.Check(ctx, &ref); err != nil {
		t.Fatalf("Check: %v", err)
	}
	// A later version under the same key changes nothing for the reference.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(claimtest.Bucket), Key: aws.String(ref.Key), Body: strings.NewReader("swapped")}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(ctx, &ref, 0); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Read after another version was put: %q, %v", got[:min(len(got), 20)], err)
	}

	wrongSHA := ref
	wrongSHA.SHA256 = strings.Repeat("0", 64)
	wrongSize := ref
	wrongSize.Size--
	missing := ref
	missing.VersionID = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for name, tc := range map[string]struct {
		ref   wire.ObjectRef
		limit int64
		want  claimcheck.Kind
	}{
		"another SHA-256":   {wrongSHA, 0, claimcheck.Tampered},
		"another size":      {wrongSize, 0, claimcheck.Tampered},
		"a missing version": {missing, 0, claimcheck.Missing},
		"above the limit":   {ref, ref.Size - 1, claimcheck.Refused},
	} {
		if _, err := s.Read(ctx, &tc.ref, tc.limit); claimcheck.KindOf(err) != tc.want {
			t.Errorf("Read, %s: %v, want kind %d", name, err, tc.want)
		}
	}
	if err := s.Check(ctx, &wrongSHA); claimcheck.KindOf(err) != claimcheck.Tampered {
		t.Errorf("Check, another SHA-256: %v", err)
	}
	if err := s.Check(ctx, &missing); claimcheck.KindOf(err) != claimcheck.Missing {
		t.Errorf("Check, a missing version: %v", err)
	}
}

// TestS3UnreachableIsUnavailable: a store whose S3 cannot be reached fails
// every operation as Unavailable, naming S3 and the key.
func TestS3UnreachableIsUnavailable(t *testing.T) {
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""), RetryMaxAttempts: 1})
	s := claimcheck.FromClient("payloads", c)
	_, err := s.Put(t.Context(), "t/results/c1/a1", claimcheck.JSON, []byte("{}"))
	var e *claimcheck.Error
	if !errors.As(err, &e) || e.Kind != claimcheck.Unavailable || !strings.Contains(err.Error(), "S3 unavailable: PutObject t/results/c1/a1") {
		t.Fatalf("Put: %v", err)
	}
	ref := wire.ObjectRef{Bucket: "payloads", Key: "t/results/c1/a1", SHA256: strings.Repeat("0", 64), Size: 2}
	if _, err := s.Read(t.Context(), &ref, 0); claimcheck.KindOf(err) != claimcheck.Unavailable {
		t.Fatalf("Read: %v", err)
	}
}

// TestALinkServesOneVersionForItsLife: the presigned URL names the
// version, its life, and a download filename.
func TestALinkServesOneVersionForItsLife(t *testing.T) {
	s, _ := claimtest.Store(t)
	ref, err := s.Put(t.Context(), "t/results/c1/a1.1", "application/zip", []byte("PK"))
	if err != nil {
		t.Fatal(err)
	}
	link, err := s.Link(t.Context(), &ref, 10*time.Minute, "export.zip")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	q := u.Query()
	if q.Get("versionId") != ref.VersionID || q.Get("X-Amz-Expires") != "600" || q.Get("response-content-disposition") != `attachment; filename="export.zip"` {
		t.Errorf("link %s", link)
	}
}
