package s3standin_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/internal/s3standin"
)

// client is an S3 client straight on the stand-in (which checks no
// signature), and the directory its objects live in.
func client(t *testing.T, buckets map[string]string) (*s3.Client, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s3")
	st, err := s3standin.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for name, versioning := range buckets {
		if err := st.CreateBucket(name, versioning); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(st.Handler())
	t.Cleanup(srv.Close)
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}), dir
}

func put(t *testing.T, c *s3.Client, bucket, key, body string) string {
	t.Helper()
	out, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return aws.ToString(out.VersionId)
}

func read(t *testing.T, c *s3.Client, bucket, key, version, rng string) (string, error) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := c.GetObject(t.Context(), in)
	if err != nil {
		return "", err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return string(b), err
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestAVersionedBucketKeepsEveryVersion: writes add versions, a delete adds
// a marker that hides the object and keeps its versions, deleting the
// marker brings the object back, a version deleted by id is gone.
func TestAVersionedBucketKeepsEveryVersion(t *testing.T) {
	c, _ := client(t, map[string]string{"v": "Enabled"})
	ctx := t.Context()
	v1 := put(t, c, "v", "k", "one")
	v2 := put(t, c, "v", "k", "two")
	if v1 == "" || v1 == v2 {
		t.Fatalf("versions %q %q", v1, v2)
	}
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("v"), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if _, err := read(t, c, "v", "k", "", ""); errCode(err) != "NoSuchKey" {
		t.Errorf("behind a delete marker: %v", err)
	}
	if b, err := read(t, c, "v", "k", v1, ""); err != nil || b != "one" {
		t.Errorf("v1 behind the marker: %v %q", err, b)
	}
	vs, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("v")})
	if err != nil || len(vs.Versions) != 2 || len(vs.DeleteMarkers) != 1 || !aws.ToBool(vs.DeleteMarkers[0].IsLatest) {
		t.Fatalf("versions: %v %+v", err, vs)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("v"), Key: aws.String("k"), VersionId: del.VersionId}); err != nil {
		t.Fatal(err)
	}
	if b, err := read(t, c, "v", "k", "", ""); err != nil || b != "two" {
		t.Errorf("the marker deleted: %v %q", err, b)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("v"), Key: aws.String("k"), VersionId: aws.String(v2)}); err != nil {
		t.Fatal(err)
	}
	if b, err := read(t, c, "v", "k", "", ""); err != nil || b != "one" {
		t.Errorf("v2 deleted: %v %q", err, b)
	}
	if _, err := read(t, c, "v", "k", v2, ""); errCode(err) != "NoSuchVersion" {
		t.Errorf("a deleted version: %v", err)
	}
}

// TestAnUnversionedBucketReplacesAndDeletes: a write replaces the object
// (its file too), a delete removes it, and no version ids appear.
func TestAnUnversionedBucketReplacesAndDeletes(t *testing.T) {
	c, dir := client(t, map[string]string{"u": "", "s": "Suspended"})
	if v := put(t, c, "u", "k", "one"); v != "" {
		t.Errorf("an unversioned bucket answered version %q", v)
	}
	put(t, c, "u", "k", "two")
	if b, err := read(t, c, "u", "k", "", ""); err != nil || b != "two" {
		t.Errorf("replaced: %v %q", err, b)
	}
	if n := files(t, dir); n != 1 {
		t.Errorf("%d object files for one object", n)
	}
	if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String("u"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, c, "u", "k", "", ""); errCode(err) != "NoSuchKey" {
		t.Errorf("deleted: %v", err)
	}
	if n := files(t, dir); n != 0 {
		t.Errorf("%d object files after the delete", n)
	}
	// Suspended: the null version is replaced.
	put(t, c, "s", "k", "one")
	put(t, c, "s", "k", "two")
	vs, err := c.ListObjectVersions(t.Context(), &s3.ListObjectVersionsInput{Bucket: aws.String("s")})
	if err != nil || len(vs.Versions) != 1 || aws.ToString(vs.Versions[0].VersionId) != "null" {
		t.Errorf("suspended: %v %+v", err, vs.Versions)
	}
}

func files(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestListsAndRanges: listing by prefix and delimiter, page by page; a
// range read reads the range.
func TestListsAndRanges(t *testing.T) {
	c, _ := client(t, map[string]string{"b": "Enabled"})
	for _, k := range []string{"a/results/1", "a/results/2", "a/args/1", "b/results/1", "top"} {
		put(t, c, "b", k, "0123456789")
	}
	var keys []string
	var token *string
	for {
		out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("a/"), MaxKeys: aws.Int32(2), ContinuationToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		token = out.NextContinuationToken
	}
	if want := []string{"a/args/1", "a/results/1", "a/results/2"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("b"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	var prefixes []string
	for _, p := range out.CommonPrefixes {
		prefixes = append(prefixes, aws.ToString(p.Prefix))
	}
	if !slices.Equal(prefixes, []string{"a/", "b/"}) || len(out.Contents) != 1 {
		t.Errorf("by delimiter: prefixes %v, %d keys", prefixes, len(out.Contents))
	}
	if b, err := read(t, c, "b", "top", "", "bytes=2-5"); err != nil || b != "2345" {
		t.Errorf("a range: %v %q", err, b)
	}
}

// TestACutBodyLeavesNothing: a body that ends before its Content-Length is
// not stored, and its temporary file is gone.
func TestACutBodyLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s3")
	st, err := s3standin.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateBucket("b", "Enabled"); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPut, "/b/k", io.MultiReader(strings.NewReader("part"), errReader{}))
	r.Header.Set("Content-Length", "100")
	w := httptest.NewRecorder()
	st.Handler().ServeHTTP(w, r)
	if w.Code == http.StatusOK {
		t.Fatal("a cut body was stored")
	}
	get := httptest.NewRecorder()
	st.Handler().ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/b/k", nil))
	if get.Code != http.StatusNotFound {
		t.Errorf("after a cut body: %d", get.Code)
	}
	tmp, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	if n := files(t, dir); n != 0 || len(tmp) != 0 {
		t.Errorf("%d object files, %d temporary files", n, len(tmp))
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection lost") }
