// Package s3front is the local stack's S3 endpoint: it checks each request
// as S3 does before an S3 server (internal/s3standin) sees it, and answers
// refusals in S3's terms (its XML <Error>, its codes and statuses).
//
// For every request, in this order:
//
//  1. the Host must name loopback (or a name the stack was told to
//     serve), as every local endpoint's; a CORS preflight is refused as S3
//     refuses it for a bucket without a CORS configuration;
//  2. a browser's request (Origin, a Sec-Fetch-Site other than none) is
//     refused — except a presigned GET or HEAD, which is served to any
//     client: its signature is its authority, which a page can neither
//     forge nor widen, and S3 sends no CORS headers, so a page may
//     navigate to it or embed it but never read it from script;
//  3. the Signature Version 4, in the Authorization header or the query
//     (presigned: not expired, not dated ahead, X-Amz-Expires at most a
//     week), with every x-amz-* header signed (internal/iam);
//  4. the operation, derived from the request; one the front does not
//     derive ([Operations]: no multipart, copy, tags, ACLs, bucket
//     management) is refused by name, never passed on;
//  5. IAM: the signer's identity policies and the bucket's policy, with
//     aws:SecureTransport (true only for a request that came over TLS) and
//     the S3 condition keys the request carries ([ContextKeys]);
//  6. for a GetObject or HeadObject of a key that does not exist, S3's
//     answer to a caller without s3:ListBucket: 403 AccessDenied, not 404;
//  7. a PutObject's body: its length, its x-amz-content-sha256, its
//     x-amz-checksum-* (header or aws-chunked trailer), read into a file —
//     the stand-in gets a checked body or nothing.
//
// What passes goes to the stand-in with only the headers it keeps (content
// headers, conditions, user metadata, the verified checksum): never the
// caller's credentials, which it would store as metadata.
package s3front

import (
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/localonly"
)

// Front is the enforcing front. Set the fields, then serve it.
type Front struct {
	// Upstream is the S3 server allowed requests go to.
	Upstream http.Handler
	// Authority authenticates and decides requests.
	Authority *iam.Authority
	// AllowHosts are Host names served besides loopback ones.
	AllowHosts []string
	// SpoolDir holds PutObject bodies while they are checked (default:
	// the system's temporary directory).
	SpoolDir string
	// OwnerEnforced reports whether a bucket disables ACLs
	// (BucketOwnerEnforced): a request that sets one is then refused as
	// S3 refuses it. nil: none does.
	OwnerEnforced func(bucket string) bool
	// Denied is told each request refused by a policy or as unserved
	// (for the stack's log).
	Denied func(who, action, resource, message string)
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		// A CORS preflight: the buckets have no CORS configuration.
		writeError(w, r, errorf(http.StatusForbidden, "AccessForbidden", "CORSResponse: CORS is not enabled for this bucket."))
		return
	}
	if !localonly.Host(r.Host, f.AllowHosts...) {
		writeError(w, r, accessDenied("host "+r.Host+" is not served by the local stack (loopback only)"))
		return
	}
	q := r.URL.Query()
	presigned := q.Get("X-Amz-Signature") != "" || q.Get("X-Amz-Credential") != ""
	if !presigned || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		if msg := localonly.Refuse(r, f.AllowHosts...); msg != "" {
			writeError(w, r, accessDenied(msg))
			return
		}
	}
	id, sig, aerr := f.Authority.AuthenticateS3(r)
	if aerr != nil {
		e := authError(aerr, presigned)
		if aerr.Failure == iam.FailExpired {
			e.Expires = expiresOf(q)
			e.ServerTime = f.Authority.Now().UTC().Format(time.RFC3339)
		}
		writeError(w, r, e)
		return
	}
	authType := "REST-HEADER"
	if sig.Presigned {
		authType = "REST-QUERY-STRING"
	}
	base := iam.Context{}
	base.Set("aws:SecureTransport", boolString(r.TLS != nil))
	base.Set("s3:authType", authType)
	base.Set("s3:signatureversion", "AWS4-HMAC-SHA256")
	base.Set("s3:x-amz-content-sha256", sig.PayloadHash)
	op, err := derive(r, base)
	if err != nil {
		msg := "User: " + id.Principal.ARN + " is not authorized to perform this request (mcpfn local: " + err.Error() + ")"
		f.deny(id, r.Method+" "+r.URL.Path, "", msg)
		writeError(w, r, accessDenied(msg))
		return
	}
	for _, c := range op.checks {
		req, d := f.Authority.Decide(id, c.action, c.resource, c.ctx)
		if d.Result != iam.Allowed {
			msg := d.Message(req)
			f.deny(id, c.action, c.resource, msg)
			writeError(w, r, accessDenied(msg))
			return
		}
	}
	if e := f.checkACL(r, op); e != nil {
		writeError(w, r, e)
		return
	}
	if (op.name == "GetObject" || op.name == "HeadObject") && op.versionID == "" && !f.exists(r, op) {
		// S3 tells a caller that may not list the bucket nothing about
		// which keys exist: a missing key is the same refusal as a
		// forbidden one.
		_, d := f.Authority.Decide(id, "s3:ListBucket", bucketARN(op.bucket), base)
		if d.Result != iam.Allowed {
			writeError(w, r, accessDenied("Access Denied"))
			return
		}
	}
	out, err := f.forwarded(r, op)
	if err != nil {
		writeError(w, r, errorf(http.StatusInternalServerError, "InternalError", err.Error()))
		return
	}
	if op.name == "PutObject" {
		body, e := spool(r, sig.PayloadHash, f.spoolDir())
		if e != nil {
			writeError(w, r, e)
			return
		}
		defer body.Close()
		out.Body, out.ContentLength = body.file, body.size
		out.Header.Set("Content-Length", strconv.FormatInt(body.size, 10)) // gofakes3 reads the header
		for k, v := range body.checksums {
			out.Header.Set(k, v)
			w.Header().Set(k, v) // S3 answers a PutObject with the checksum it verified
		}
	}
	f.Upstream.ServeHTTP(&responseFilter{ResponseWriter: w, keepChecksums: keepChecksums(r, op)}, out)
}

func (f *Front) deny(id *iam.Identity, action, resource, msg string) {
	if f.Denied != nil {
		f.Denied(id.Name, action, resource, msg)
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// checkACL refuses what sets an ACL: S3 refuses it for a bucket with ACLs
// disabled, and the front does not evaluate s3:PutObjectAcl otherwise. The
// one ACL such a bucket accepts is bucket-owner-full-control.
func (f *Front) checkACL(r *http.Request, op *operation) *s3Error {
	acl := r.Header.Get("X-Amz-Acl")
	if op.name != "PutObject" || acl == "" || acl == "bucket-owner-full-control" {
		return nil
	}
	if f.OwnerEnforced != nil && f.OwnerEnforced(op.bucket) {
		return errorf(http.StatusBadRequest, "AccessControlListNotSupported", "The bucket does not allow ACLs")
	}
	return accessDenied("ACLs (x-amz-acl) are not evaluated by the local stack")
}

// exists asks the stand-in whether the object exists (a HEAD, which reads
// no bytes).
func (f *Front) exists(r *http.Request, op *operation) bool {
	head := r.Clone(r.Context())
	head.Method, head.Header, head.Body, head.ContentLength = http.MethodHead, http.Header{}, http.NoBody, 0
	head.URL = &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath}
	rec := &statusRecorder{header: http.Header{}}
	f.Upstream.ServeHTTP(rec, head)
	return rec.status == 0 || rec.status == http.StatusOK
}

// The request headers the stand-in is given: what S3 keeps with an object
// or uses to answer. Everything else — the caller's credentials and
// signature above all, which gofakes3 would store as metadata and hand
// every reader — stays here.
var forwardedHeaders = []string{
	"Content-Type", "Content-Disposition", "Content-Encoding", "Content-Md5",
	"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
}

func (f *Front) forwarded(r *http.Request, op *operation) (*http.Request, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	out.Host, out.RemoteAddr, out.TLS = r.Host, r.RemoteAddr, r.TLS
	for name, vals := range r.Header {
		if slices.Contains(forwardedHeaders, name) || strings.HasPrefix(name, "X-Amz-Meta-") {
			out.Header[name] = slices.Clone(vals)
		}
	}
	if ce := out.Header.Get("Content-Encoding"); ce != "" {
		// aws-chunked is how the body travelled, not what it is.
		var kept []string
		for _, e := range strings.Split(ce, ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.EqualFold(e, "aws-chunked") {
				kept = append(kept, e)
			}
		}
		out.Header.Del("Content-Encoding")
		if len(kept) > 0 {
			out.Header.Set("Content-Encoding", strings.Join(kept, ","))
		}
	}
	if op.name != "PutObject" {
		out.Header.Del("Content-Md5")
	}
	return out, nil
}

// keepChecksums: S3 sends an object's stored checksum with a GetObject or
// HeadObject only when asked (x-amz-checksum-mode: ENABLED), and never with
// a range (it covers the whole object); a PutObject's answer has the one
// it verified.
func keepChecksums(r *http.Request, op *operation) bool {
	switch op.name {
	case "PutObject":
		return true
	case "GetObject", "HeadObject":
		mode := r.Header.Get("X-Amz-Checksum-Mode")
		if mode == "" {
			mode = r.URL.Query().Get("X-Amz-Checksum-Mode") // presigned
		}
		return strings.EqualFold(mode, "ENABLED") && r.Header.Get("Range") == ""
	}
	return false
}

// responseFilter passes the stand-in's answer on without the CORS headers
// gofakes3 adds to every answer (S3 sends none for a bucket without a CORS
// configuration) and, unless asked for, the stored checksums.
type responseFilter struct {
	http.ResponseWriter
	keepChecksums bool
	wrote         bool
}

func (rf *responseFilter) WriteHeader(status int) {
	if !rf.wrote {
		rf.wrote = true
		h := rf.ResponseWriter.Header()
		for name := range h {
			lower := strings.ToLower(name)
			if strings.HasPrefix(lower, "access-control-") ||
				(!rf.keepChecksums && strings.HasPrefix(lower, "x-amz-checksum-")) {
				h.Del(name)
			}
		}
	}
	rf.ResponseWriter.WriteHeader(status)
}

func (rf *responseFilter) Write(p []byte) (int, error) {
	if !rf.wrote {
		rf.WriteHeader(http.StatusOK)
	}
	return rf.ResponseWriter.Write(p)
}

// statusRecorder keeps only the status of an answer.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.header }
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return len(p), nil
}

// expiresOf is when a presigned URL stopped being valid, as S3 says it.
func expiresOf(q url.Values) string {
	at, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	n, nerr := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || nerr != nil {
		return ""
	}
	return at.Add(time.Duration(n) * time.Second).UTC().Format(time.RFC3339)
}

// spoolDir is where bodies wait.
func (f *Front) spoolDir() string {
	if f.SpoolDir != "" {
		return f.SpoolDir
	}
	return os.TempDir()
}
