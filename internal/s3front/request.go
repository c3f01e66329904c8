package s3front

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// Operations are the S3 operations whose authorization the front derives;
// every other request is refused (AccessDenied naming it), for every
// caller. Buckets are the template's: nothing creates, configures or
// deletes one over the API.
var Operations = []string{
	"GetObject", "HeadObject", "PutObject", "DeleteObject",
	"ListObjects", "ListObjectsV2", "ListObjectVersions", "HeadBucket",
	"GetBucketVersioning", "GetBucketLocation", "ListBuckets",
}

// Actions are the IAM actions those operations are authorized as.
var Actions = []string{
	"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion",
	"s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketVersioning", "s3:GetBucketLocation", "s3:ListAllMyBuckets",
}

// ContextKeys are the condition keys the front supplies with every
// request (the s3: ones where the request has them).
var ContextKeys = []string{"aws:SecureTransport", "s3:authType", "s3:signatureversion", "s3:x-amz-content-sha256", "s3:prefix", "s3:delimiter", "s3:VersionId"}

// operation is one request as the front authorizes and serves it.
type operation struct {
	name        string // S3's name for it: GetObject, PutObject, …
	bucket, key string
	versionID   string
	checks      []check
}

// check is one authorization a request needs.
type check struct {
	action, resource string
	ctx              iam.Context
}

func bucketARN(bucket string) string      { return "arn:aws:s3:::" + bucket }
func objectARN(bucket, key string) string { return "arn:aws:s3:::" + bucket + "/" + key }

// Query parameters the front understands, by what they address.
var (
	presignParams = []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"}
	// X-Amz-Checksum-Mode is the header a presigned GetObject carries in
	// its query: an SDK that validates checksums when supported (the
	// default of config.LoadDefaultConfig) signs it into the URL.
	objectParams = []string{"versionId", "x-id", "response-content-type", "response-content-language", "response-expires",
		"response-cache-control", "response-content-disposition", "response-content-encoding", "X-Amz-Checksum-Mode"}
	bucketParams = []string{"x-id", "list-type", "prefix", "delimiter", "max-keys", "marker", "continuation-token", "start-after",
		"encoding-type", "fetch-owner", "versions", "key-marker", "version-id-marker", "versioning", "location"}
)

// Request headers that ask for what the front does not evaluate: each
// needs another permission, or a feature the stand-in does not have.
var unservedHeaders = map[string]string{
	"X-Amz-Copy-Source":                               "CopyObject",
	"X-Amz-Tagging":                                   "object tags (s3:PutObjectTagging)",
	"X-Amz-Object-Lock-Mode":                          "object lock",
	"X-Amz-Object-Lock-Retain-Until-Date":             "object lock",
	"X-Amz-Object-Lock-Legal-Hold":                    "object lock",
	"X-Amz-Website-Redirect-Location":                 "website redirects",
	"X-Amz-Server-Side-Encryption-Customer-Algorithm": "SSE-C",
	"X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id":     "SSE-KMS",
	"X-Amz-Grant-Read":                                "ACLs",
	"X-Amz-Grant-Read-Acp":                            "ACLs",
	"X-Amz-Grant-Write-Acp":                           "ACLs",
	"X-Amz-Grant-Full-Control":                        "ACLs",
}

// derive reads what r asks for: the operation, its resource and the
// authorizations S3 would check, with the condition keys the request
// carries. An error names what the front does not serve.
func derive(r *http.Request, base iam.Context) (*operation, error) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	q := r.URL.Query()
	known := slices.Concat(presignParams, bucketParams)
	if key != "" {
		known = slices.Concat(presignParams, objectParams)
	}
	for name := range q {
		if !slices.Contains(known, name) {
			if name == "uploads" || name == "uploadId" || name == "partNumber" {
				return nil, fmt.Errorf("multipart uploads are not served by the local stack (one PutObject holds up to 5 GB)")
			}
			return nil, fmt.Errorf("the S3 request ?%s on %s is not served by the local stack", name, r.URL.Path)
		}
	}
	ctx := func(kv ...string) iam.Context {
		c := iam.Context{}
		for k, v := range base {
			c[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return c
	}
	listCtx := func() iam.Context {
		c := ctx()
		for _, k := range []string{"prefix", "delimiter"} {
			if _, ok := q[k]; ok {
				c.Set("s3:"+k, q.Get(k))
			}
		}
		return c
	}
	op := &operation{bucket: bucket, key: key, versionID: q.Get("versionId")}
	one := func(name, action, resource string, c iam.Context) (*operation, error) {
		op.name = name
		op.checks = []check{{action, resource, c}}
		return op, nil
	}
	switch {
	case bucket == "":
		if r.Method == http.MethodGet {
			return one("ListBuckets", "s3:ListAllMyBuckets", "*", ctx())
		}
	case key == "":
		_, versioning := q["versioning"]
		_, location := q["location"]
		_, versions := q["versions"]
		switch {
		case r.Method == http.MethodGet && versioning:
			return one("GetBucketVersioning", "s3:GetBucketVersioning", bucketARN(bucket), ctx())
		case r.Method == http.MethodGet && location:
			return one("GetBucketLocation", "s3:GetBucketLocation", bucketARN(bucket), ctx())
		case r.Method == http.MethodGet && versions:
			return one("ListObjectVersions", "s3:ListBucketVersions", bucketARN(bucket), listCtx())
		case r.Method == http.MethodGet && q.Get("list-type") == "2":
			return one("ListObjectsV2", "s3:ListBucket", bucketARN(bucket), listCtx())
		case r.Method == http.MethodGet:
			return one("ListObjects", "s3:ListBucket", bucketARN(bucket), listCtx())
		case r.Method == http.MethodHead:
			return one("HeadBucket", "s3:ListBucket", bucketARN(bucket), ctx())
		}
		return nil, fmt.Errorf("%s %s: buckets are the template's; the local stack creates them at start and serves no bucket management", r.Method, r.URL.Path)
	default:
		obj := objectARN(bucket, key)
		versioned := func(action, withVersion string) (string, iam.Context) {
			if op.versionID != "" {
				return withVersion, ctx("s3:VersionId", op.versionID)
			}
			return action, ctx()
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			name := "GetObject"
			if r.Method == http.MethodHead {
				name = "HeadObject"
			}
			action, c := versioned("s3:GetObject", "s3:GetObjectVersion")
			return one(name, action, obj, c)
		case http.MethodPut:
			if op.versionID != "" {
				return nil, fmt.Errorf("PutObject takes no versionId")
			}
			for h, what := range unservedHeaders {
				if r.Header.Get(h) != "" {
					return nil, fmt.Errorf("%s (%s) is not served by the local stack", what, h)
				}
			}
			return one("PutObject", "s3:PutObject", obj, ctx())
		case http.MethodDelete:
			action, c := versioned("s3:DeleteObject", "s3:DeleteObjectVersion")
			return one("DeleteObject", action, obj, c)
		}
	}
	return nil, fmt.Errorf("%s %s is not an S3 operation the local stack serves (it serves %s)", r.Method, r.URL.Path, strings.Join(Operations, ", "))
}
