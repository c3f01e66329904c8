package s3front_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/s3front"
	"github.com/mcpfn/mcpfn/internal/s3standin"
)

const (
	region  = "us-east-1"
	account = "000000000000"
	bucket  = "payloadsbucket"
)

// world is a front over a stand-in with the template's payloads bucket:
// versioned, ACLs disabled, TLS only; a tool's role on its own prefixes,
// the gateway's on the tool's args (write) and results (read), an operator
// with every permission.
type world struct {
	auth                 *iam.Authority
	tool, gateway, admin *iam.Identity
	tlsURL, plainURL     string
	tlsClient            *http.Client
	denied               []string
	mu                   sync.Mutex
}

func policy(t *testing.T, kind iam.Kind, doc string) *iam.Policy {
	t.Helper()
	p, err := iam.ParsePolicy("test", kind, doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{auth: iam.NewAuthority(region, account)}
	obj := "arn:aws:s3:::" + bucket + "/"
	session := func(role, doc string) *iam.Identity {
		id := &iam.Identity{Name: role, Principal: iam.SessionPrincipal("arn:aws:iam::"+account+":role/"+role, role),
			Credentials: iam.NewSessionCredentials(), Policies: []*iam.Policy{policy(t, iam.IdentityBased, doc)}}
		w.auth.Add(id)
		return id
	}
	w.tool = session("NoteAddFunctionRole", `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion","s3:PutObject"],"Resource":"`+obj+`note_add/results/*"},
		{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"`+obj+`note_add/args/*"}]}`)
	w.gateway = session("GatewayFunctionRole", `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":"s3:PutObject","Resource":"`+obj+`note_add/args/*"},
		{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"`+obj+`note_add/results/*"}]}`)
	w.admin = &iam.Identity{Name: "operator", Principal: iam.Principal{ARN: "arn:aws:iam::" + account + ":user/op", IAMARN: "arn:aws:iam::" + account + ":user/op", Account: account},
		Credentials: iam.Credentials{AccessKeyID: "local", SecretAccessKey: "local"},
		Policies:    []*iam.Policy{policy(t, iam.IdentityBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`)}}
	w.auth.Add(w.admin)
	w.auth.SetResourcePolicy("arn:aws:s3:::"+bucket, policy(t, iam.ResourceBased, `{"Version":"2012-10-17","Statement":[
		{"Sid":"TLSOnly","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::`+bucket+`","arn:aws:s3:::`+bucket+`/*"],
		 "Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`))

	st, err := s3standin.New(t.TempDir() + "/s3")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.CreateBucket(bucket, "Enabled"); err != nil {
		t.Fatal(err)
	}
	front := &s3front.Front{Upstream: st.Handler(), Authority: w.auth, SpoolDir: t.TempDir(),
		OwnerEnforced: func(string) bool { return true },
		Denied: func(who, action, resource, msg string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.denied = append(w.denied, who+" "+action+" "+resource)
		}}
	tlsSrv := httptest.NewUnstartedServer(front)
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plain := httptest.NewServer(front)
	t.Cleanup(plain.Close)
	w.tlsURL, w.plainURL, w.tlsClient = tlsSrv.URL, plain.URL, tlsSrv.Client()
	return w
}

func (w *world) client(id *iam.Identity, endpoint string) *s3.Client {
	c := id.Credentials
	return s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true, HTTPClient: w.tlsClient,
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken),
	})
}

func put(ctx context.Context, c *s3.Client, key string, body []byte) (*s3.PutObjectOutput, error) {
	return c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256, ContentType: aws.String("application/json")})
}

func get(ctx context.Context, c *s3.Client, key, version string) ([]byte, *s3.GetObjectOutput, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	out, err := c.GetObject(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return b, out, err
}

// code is the S3 error code of err ("" for none).
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return "not an API error: " + err.Error()
	}
	return ""
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

// TestARoleReachesItsOwnPrefixesOnly: through the SDK, as a function calls
// S3: the tool's role writes and reads its results (S3 verifies the
// SHA-256 and returns it), reads its arguments, and is refused — with S3's
// AccessDenied — writing its arguments, anything of another tool's, and a
// key that does not exist (no s3:ListBucket: S3 does not say which keys
// exist). The gateway's role writes the tool's arguments and reads its
// results, and nothing else.
func TestARoleReachesItsOwnPrefixesOnly(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	tool, gw := w.client(w.tool, w.tlsURL), w.client(w.gateway, w.tlsURL)
	result := []byte(`{"content":[{"type":"text","text":"a large result"}]}`)
	out, err := put(ctx, tool, "note_add/results/c1/a1", result)
	if err != nil {
		t.Fatalf("the tool's own result: %v", err)
	}
	if aws.ToString(out.VersionId) == "" || aws.ToString(out.ChecksumSHA256) != sha(result) {
		t.Errorf("PutObject answered version %q, checksum %q", aws.ToString(out.VersionId), aws.ToString(out.ChecksumSHA256))
	}
	for name, c := range map[string]*s3.Client{"tool": tool, "gateway": gw} {
		b, g, err := get(ctx, c, "note_add/results/c1/a1", aws.ToString(out.VersionId))
		if err != nil || !bytes.Equal(b, result) {
			t.Fatalf("%s reads the result: %v %q", name, err, b)
		}
		if aws.ToString(g.ChecksumSHA256) != sha(result) || aws.ToString(g.ContentType) != "application/json" {
			t.Errorf("%s: checksum %q, content type %q", name, aws.ToString(g.ChecksumSHA256), aws.ToString(g.ContentType))
		}
	}
	args := []byte(`{"text":"large arguments"}`)
	if _, err := put(ctx, gw, "note_add/args/c1", args); err != nil {
		t.Fatalf("the gateway stores the arguments: %v", err)
	}
	if b, _, err := get(ctx, tool, "note_add/args/c1", ""); err != nil || !bytes.Equal(b, args) {
		t.Fatalf("the tool reads its arguments: %v %q", err, b)
	}
	for name, call := range map[string]func() error{
		"tool writes its arguments":      func() error { _, err := put(ctx, tool, "note_add/args/c1", []byte("{}")); return err },
		"tool writes another's result":   func() error { _, err := put(ctx, tool, "note_delete/results/c1/a1", []byte("{}")); return err },
		"tool reads another's arguments": func() error { _, _, err := get(ctx, tool, "note_delete/args/c1", ""); return err },
		"tool reads a missing result":    func() error { _, _, err := get(ctx, tool, "note_add/results/nothing", ""); return err },
		"tool deletes its result": func() error {
			_, err := tool.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("note_add/results/c1/a1")})
			return err
		},
		"tool lists the bucket": func() error {
			_, err := tool.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
			return err
		},
		"gateway writes a result":       func() error { _, err := put(ctx, gw, "note_add/results/c1/a2", []byte("{}")); return err },
		"gateway reads the arguments":   func() error { _, _, err := get(ctx, gw, "note_add/args/c1", ""); return err },
		"gateway writes another's args": func() error { _, err := put(ctx, gw, "note_delete/args/c1", []byte("{}")); return err },
	} {
		if err := call(); code(err) != "AccessDenied" {
			t.Errorf("%s: %v, want AccessDenied", name, err)
		}
	}
	// Keys with spaces, non-ASCII and reserved characters, signed as the
	// SDK signs them.
	odd := "note_add/results/a b/ü+é=&%41/x"
	if _, err := put(ctx, tool, odd, result); err != nil {
		t.Fatalf("an odd key: %v", err)
	}
	if b, _, err := get(ctx, tool, odd, ""); err != nil || !bytes.Equal(b, result) {
		t.Fatalf("an odd key read back: %v %q", err, b)
	}
	if _, _, err := get(ctx, tool, "note_add/results/a b/ü+é=&A/x", ""); code(err) != "AccessDenied" {
		t.Errorf("%%41 is not A: %v", err)
	}
	// The operator may list: it learns the missing key is missing.
	if _, _, err := get(ctx, w.client(w.admin, w.tlsURL), "note_add/results/nothing", ""); code(err) != "NoSuchKey" {
		t.Errorf("the operator reads a missing key: %v, want NoSuchKey", err)
	}
}

// TestPlaintextIsDeniedByTheBucketPolicy: a request that did not come over
// TLS has aws:SecureTransport false, and the bucket's policy denies it
// explicitly, even to a role whose own policy allows it.
func TestPlaintextIsDeniedByTheBucketPolicy(t *testing.T) {
	w := newWorld(t)
	_, err := put(t.Context(), w.client(w.tool, w.plainURL), "note_add/results/c1/a1", []byte("{}"))
	var ae smithy.APIError
	if code(err) != "AccessDenied" || !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage(), "explicit deny in a resource-based policy") {
		t.Fatalf("over plain HTTP: %v", err)
	}
}

// TestVersionsAreKeptAndReadByID: a second write of a key makes a second
// version; the first stays readable by its id (GET and HEAD), so a
// reference that names a version cannot be swapped under.
func TestVersionsAreKeptAndReadByID(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	tool := w.client(w.tool, w.tlsURL)
	first, err := put(ctx, tool, "note_add/results/c1/a1", []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := put(ctx, tool, "note_add/results/c1/a1", []byte("the second one"))
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(first.VersionId) == aws.ToString(second.VersionId) {
		t.Fatal("one version id for two writes")
	}
	if b, _, err := get(ctx, tool, "note_add/results/c1/a1", aws.ToString(first.VersionId)); err != nil || string(b) != "first" {
		t.Errorf("the first version: %v %q", err, b)
	}
	if b, _, err := get(ctx, tool, "note_add/results/c1/a1", ""); err != nil || string(b) != "the second one" {
		t.Errorf("the current version: %v %q", err, b)
	}
	h, err := tool.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("note_add/results/c1/a1"), VersionId: first.VersionId, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToInt64(h.ContentLength) != 5 || aws.ToString(h.VersionId) != aws.ToString(first.VersionId) || aws.ToString(h.ChecksumSHA256) != sha([]byte("first")) {
		t.Errorf("HEAD of the first version: %v %+v", err, h)
	}
}

// TestABodyThatFailsItsChecksIsNotStored: a body whose SHA-256 checksum,
// x-amz-content-sha256 or length is not what the request declares is
// refused as S3 refuses it, and leaves no version behind.
func TestABodyThatFailsItsChecksIsNotStored(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	tool := w.client(w.tool, w.tlsURL)
	key := "note_add/results/c1/bad"
	_, err := tool.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("the body"),
		ChecksumSHA256: aws.String(sha([]byte("another body")))})
	if code(err) != "BadDigest" {
		t.Errorf("a wrong checksum: %v, want BadDigest", err)
	}
	// x-amz-content-sha256 of another body, signed.
	for name, req := range map[string]*http.Request{
		"content sha256": w.signedPut(t, w.tool, key, []byte("the body"), hexSHA([]byte("another body")), int64(len("the body"))),
	} {
		res, err := w.tlsClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>XAmzContentSHA256Mismatch</Code>") {
			t.Errorf("%s: %d %s", name, res.StatusCode, body)
		}
	}
	vs, err := w.client(w.admin, w.tlsURL).ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil || len(vs.Versions) != 0 || len(vs.DeleteMarkers) != 0 {
		t.Errorf("after refused bodies: %v, %d versions", err, len(vs.Versions))
	}
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return fmt.Sprintf("%x", s)
}

// signedPut is a PutObject signed by hand: body sent, payloadHash
// declared, Content-Length contentLength.
func (w *world) signedPut(t *testing.T, id *iam.Identity, key string, body []byte, payloadHash string, contentLength int64) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPut, w.tlsURL+"/"+bucket+"/"+key, io.NopCloser(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = contentLength
	r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	r.Header.Set("X-Amz-Security-Token", id.Credentials.SessionToken)
	c := id.Credentials
	if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(context.Background(),
		aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}, r, payloadHash, "s3", region, time.Now()); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPresignedURLsAreServedUntilTheyExpire: a URL the gateway presigns is
// served to any client — a browser's too, without CORS headers — while it
// is valid; expired or tampered, it is refused with S3's error.
func TestPresignedURLsAreServedUntilTheyExpire(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	result := []byte("a result past the inline ceiling")
	out, err := put(ctx, w.client(w.tool, w.tlsURL), "note_add/results/c1/a1", result)
	if err != nil {
		t.Fatal(err)
	}
	presign := s3.NewPresignClient(w.client(w.gateway, w.tlsURL))
	req, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("note_add/results/c1/a1"), VersionId: out.VersionId},
		s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(u string, header http.Header) (int, string, http.Header) {
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		for k, v := range header {
			r.Header[k] = v
		}
		res, err := w.tlsClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	if status, body, _ := fetch(req.URL, nil); status != 200 || body != string(result) {
		t.Fatalf("the presigned URL: %d %s", status, body)
	}
	// Presigned by a client built with config.LoadDefaultConfig (the
	// gateway's): it validates checksums when supported, which signs
	// X-Amz-Checksum-Mode into the URL; S3 serves it, with the checksum.
	validating := w.client(w.gateway, w.tlsURL)
	validating = s3.New(validating.Options(), func(o *s3.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenSupported })
	creq, err := s3.NewPresignClient(validating).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("note_add/results/c1/a1"), VersionId: out.VersionId},
		s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(creq.URL, "X-Amz-Checksum-Mode=ENABLED") {
		t.Fatalf("the SDK no longer signs the checksum mode into the URL: %s", creq.URL)
	}
	if status, body, h := fetch(creq.URL, nil); status != 200 || body != string(result) || h.Get("X-Amz-Checksum-Sha256") == "" {
		t.Fatalf("the presigned URL with X-Amz-Checksum-Mode: %d %s, checksum %q", status, body, h.Get("X-Amz-Checksum-Sha256"))
	}
	status, body, h := fetch(req.URL, http.Header{"Origin": {"https://chat.example"}, "Sec-Fetch-Site": {"cross-site"}})
	if status != 200 || body != string(result) || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("from a browser: %d %q, Access-Control-Allow-Origin %q", status, body, h.Get("Access-Control-Allow-Origin"))
	}
	// Expired: the authority's clock past X-Amz-Date + X-Amz-Expires.
	signedAt := time.Now()
	w.auth.SetClock(func() time.Time { return signedAt.Add(5*time.Minute + 2*time.Second) })
	if status, body, _ := fetch(req.URL, nil); status != 403 || !strings.Contains(body, "<Code>AccessDenied</Code><Message>Request has expired</Message>") {
		t.Errorf("expired: %d %s", status, body)
	}
	w.auth.SetClock(time.Now)
	u, _ := url.Parse(req.URL)
	u.Path = "/" + bucket + "/note_add/results/c1/other"
	if status, body, _ := fetch(u.String(), nil); status != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
		t.Errorf("another key: %d %s", status, body)
	}
	// A header-signed request from a page is refused before anything.
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.tlsURL+"/"+bucket+"/note_add/results/c1/a1", nil)
	r.Header.Set("Origin", "https://evil.example")
	res, err := w.tlsClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("a browser's header request: %d", res.StatusCode)
	}
}

// TestWhatTheFrontDoesNotEvaluateIsRefused: multipart uploads, copies,
// ACLs, bucket management and a foreign Host never reach the stand-in.
func TestWhatTheFrontDoesNotEvaluateIsRefused(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	admin := w.client(w.admin, w.tlsURL)
	if _, err := put(ctx, admin, "a/b", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"multipart": func() error {
			_, err := admin.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("a/c")})
			return err
		},
		"copy": func() error {
			_, err := admin.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/c"), CopySource: aws.String(bucket + "/a/b")})
			return err
		},
		"delete bucket": func() error {
			_, err := admin.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
			return err
		},
		"create bucket": func() error {
			_, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("other")})
			return err
		},
		"tags": func() error {
			_, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/c"), Body: strings.NewReader("x"), Tagging: aws.String("a=b")})
			return err
		},
	} {
		if err := call(); code(err) != "AccessDenied" {
			t.Errorf("%s: %v, want AccessDenied", name, err)
		}
	}
	_, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/c"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLPublicRead})
	if code(err) != "AccessControlListNotSupported" {
		t.Errorf("a public ACL: %v", err)
	}
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.tlsURL+"/"+bucket+"/a/b", nil)
	r.Host = "evil.example"
	res, err := w.tlsClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("a foreign Host: %d", res.StatusCode)
	}
}
