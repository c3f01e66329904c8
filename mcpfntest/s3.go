package mcpfntest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/s3front"
	"github.com/mcpfn/mcpfn/internal/s3standin"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// S3Server is an S3 for one test, for buckets of the project's own
// template.yaml: the S3 stand-in of `mcpfn local` behind the same front
// (TLS, Signature Version 4, each body's checksums checked before it is
// stored, S3's errors in S3's XML), its objects in files under the test's
// temporary directory.
//
// Its one client ([S3Server.Client]) may read, write and delete objects and
// their versions, and may not list buckets: a missing object then answers
// 403 AccessDenied, as it does to a deployed tool, whose role never lists.
// IAM as the template grants it per tool is not enforced here; `mcpfn
// local` enforces it.
type S3Server struct {
	srv     *httptest.Server
	standin *s3standin.Server
	creds   iam.Credentials
	tmpl    *samtemplate.Template
	seq     atomic.Uint64
}

// The kit's S3 account and region, as a deployed function would see them.
const (
	s3Region  = "us-east-1"
	s3Account = "000000000000"
)

// S3 starts an S3 for the test, stopped and emptied when the test ends.
// Each call starts one of its own.
func S3(t testing.TB) *S3Server {
	t.Helper()
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	dir := t.TempDir()
	standin, err := s3standin.New(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	policy, err := iam.ParsePolicy("mcpfntest S3 client", iam.IdentityBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow",`+
		`"Action":["s3:GetObject","s3:GetObjectVersion","s3:PutObject","s3:DeleteObject","s3:DeleteObjectVersion"],"Resource":"arn:aws:s3:::*/*"}]}`)
	if err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	auth := iam.NewAuthority(s3Region, s3Account)
	role := "arn:aws:iam::" + s3Account + ":role/mcpfntest"
	id := &iam.Identity{Name: "mcpfntest", Principal: iam.SessionPrincipal(role, "mcpfntest"), Credentials: iam.NewSessionCredentials(), Policies: []*iam.Policy{policy}}
	auth.Add(id)
	front := &s3front.Front{Upstream: standin.Handler(), Authority: auth, SpoolDir: dir}
	s := &S3Server{srv: httptest.NewUnstartedServer(front), standin: standin, creds: id.Credentials, tmpl: tmpl}
	s.srv.StartTLS()
	t.Cleanup(func() {
		s.srv.Close()
		_ = standin.Close()
	})
	return s
}

// Endpoint is the server's URL (https, path-style), for
// AWS_ENDPOINT_URL_S3. Its certificate is the test server's own: use
// [S3Server.Client], or [S3Server.HTTPClient] for a client of your own.
func (s *S3Server) Endpoint() string { return s.srv.URL }

// HTTPClient is an HTTP client that trusts the server's certificate.
func (s *S3Server) HTTPClient() *http.Client { return s.srv.Client() }

// Client is an S3 client of the server (path-style), signing with the
// kit's credentials.
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: s3Region, BaseEndpoint: aws.String(s.srv.URL), UsePathStyle: true,
		Credentials: credentials.StaticCredentialsProvider{Value: aws.Credentials{
			AccessKeyID: s.creds.AccessKeyID, SecretAccessKey: s.creds.SecretAccessKey, SessionToken: s.creds.SessionToken,
		}},
		HTTPClient: s.srv.Client(),
	})
}

// Bucket creates the bucket that the template.yaml at the root of the
// module under test defines as logicalID — with the versioning it declares
// there — under a name no other call uses, and returns that name.
func (s *S3Server) Bucket(t testing.TB, logicalID string) string {
	t.Helper()
	versioning, err := s.tmpl.BucketVersioning(logicalID, samtemplate.Values{})
	if err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	// A logical id is letters and digits; a bucket name is at most 63
	// lowercase letters, digits and hyphens.
	name := strings.ToLower(logicalID)
	name = fmt.Sprintf("%s-%d", name[:min(len(name), 40)], s.seq.Add(1))
	if err := s.standin.CreateBucket(name, versioning); err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	return name
}
