// Package claimcheck moves what does not fit a Lambda payload, an answer or
// a task record into the payloads bucket and back (issue 22, decision
// 0037): one object per stored payload, written with a SHA-256 that S3
// verifies, read back by version and hashed again before anything acts on
// it. The adapter (results, and the arguments it reads), the gateway
// (arguments, and the results it resolves or presigns) and `mcpfn audit
// verify` share it, so the three agree on what a reference proves.
//
// It is public for whoever reads or writes those payloads without the
// gateway: a client of your own that invokes a tool function directly gets
// a large result as a [wire.ObjectRef] and reads it with [Store.Read],
// which refuses bytes whose hash is not the reference's (decision 0042).
package claimcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mcpfn/mcpfn/wire"
)

// Environment: the payloads bucket every generated function and the
// gateway are given (template.yaml, internal/samgen), and the local
// stack's path-style addressing (the SDK for Go reads no variable for it).
const (
	EnvBucket       = "MCPFN_PAYLOADS_BUCKET"
	EnvUsePathStyle = "AWS_S3_USE_PATH_STYLE"
)

// JSON is the content type of stored arguments and results.
const JSON = "application/json"

// S3 is the part of the S3 API the claim check calls; *s3.Client has it.
type S3 interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// Presigner signs GET URLs; *s3.PresignClient is one.
type Presigner interface {
	PresignGetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// Store is the payloads bucket as one role reaches it.
type Store struct {
	Bucket string
	Client S3
	// Presign is needed only by who answers with links (the gateway).
	Presign Presigner
}

// NewClient is the S3 client of cfg, path-style when getenv says so.
func NewClient(cfg aws.Config, getenv func(string) string) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = strings.EqualFold(strings.TrimSpace(getenv(EnvUsePathStyle)), "true")
	})
}

// FromClient is a Store of bucket reached with c, presigning with it too.
func FromClient(bucket string, c *s3.Client) *Store {
	return &Store{Bucket: bucket, Client: c, Presign: s3.NewPresignClient(c)}
}

// Kind says what went wrong with a stored payload.
type Kind int

const (
	// Unavailable: S3 could not be reached, or refused or failed the
	// request (throttled, 5xx, a connection lost). Retrying may work.
	Unavailable Kind = iota + 1
	// Missing: the object version is not there (expired by the bucket's
	// lifecycle, deleted) or not readable by this role: S3 answers both
	// the same way to a role that may not list the bucket.
	Missing
	// Tampered: the bytes are not the ones the reference names (size or
	// SHA-256), or S3's checksum of them differs.
	Tampered
	// Refused: the reference itself is not one this reader accepts
	// (another bucket, another tool's prefix, malformed), or the object
	// is larger than the reader takes.
	Refused
)

// Error is a failed claim-check operation.
type Error struct {
	Kind Kind
	Op   string // PutObject, GetObject, HeadObject, presign, check
	Key  string
	Err  error
}

func (e *Error) Error() string {
	what := map[Kind]string{Unavailable: "S3 unavailable", Missing: "object missing or expired", Tampered: "object does not match its reference", Refused: "reference refused"}[e.Kind]
	return fmt.Sprintf("%s: %s %s: %v", what, e.Op, e.Key, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf is err's Kind, 0 when err is no *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// classify turns an S3 API error into an *Error: 403 and 404 say the
// object is gone (or not ours to read), anything else that S3 is not
// serving.
func classify(op, key string, err error) error {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotFound, http.StatusForbidden:
			if op != "PutObject" {
				return &Error{Kind: Missing, Op: op, Key: key, Err: err}
			}
		}
	}
	return &Error{Kind: Unavailable, Op: op, Key: key, Err: err}
}

// Put stores body under key with contentType and returns its reference.
// S3 is sent the body's SHA-256 and refuses a body that does not match
// it; the version S3 answers is the reference's.
func (s *Store) Put(ctx context.Context, key, contentType string, body []byte) (wire.ObjectRef, error) {
	sum := sha256.Sum256(body)
	out, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		ContentType:       aws.String(contentType),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
	})
	if err != nil {
		return wire.ObjectRef{}, classify("PutObject", key, err)
	}
	return wire.ObjectRef{
		Bucket: s.Bucket, Key: key, VersionID: aws.ToString(out.VersionId),
		Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), ContentType: contentType,
	}, nil
}

// Read returns the bytes of ref's version, hashed while they arrive and
// compared with ref's size and SHA-256 before they are returned. A
// reference above limit bytes (limit > 0) is refused before anything is
// read.
func (s *Store) Read(ctx context.Context, ref *wire.ObjectRef, limit int64) ([]byte, error) {
	want, err := ref.Sum()
	if err != nil {
		return nil, &Error{Kind: Refused, Op: "GetObject", Key: ref.Key, Err: err}
	}
	if limit > 0 && ref.Size > limit {
		return nil, &Error{Kind: Refused, Op: "GetObject", Key: ref.Key, Err: fmt.Errorf("%d bytes, above the %d this reader takes", ref.Size, limit)}
	}
	in := &s3.GetObjectInput{Bucket: aws.String(ref.Bucket), Key: aws.String(ref.Key)}
	if ref.VersionID != "" {
		in.VersionId = aws.String(ref.VersionID)
	}
	out, err := s.Client.GetObject(ctx, in)
	if err != nil {
		return nil, classify("GetObject", ref.Key, err)
	}
	defer out.Body.Close()
	if n := aws.ToInt64(out.ContentLength); out.ContentLength != nil && n != ref.Size {
		return nil, &Error{Kind: Tampered, Op: "GetObject", Key: ref.Key, Err: fmt.Errorf("%d bytes, the reference says %d", n, ref.Size)}
	}
	h := sha256.New()
	buf := bytes.NewBuffer(make([]byte, 0, ref.Size))
	// One byte more than the reference: a longer body is caught without
	// reading all of it.
	n, err := io.Copy(io.MultiWriter(buf, h), io.LimitReader(out.Body, ref.Size+1))
	if err != nil {
		return nil, &Error{Kind: Unavailable, Op: "GetObject", Key: ref.Key, Err: err}
	}
	if n != ref.Size || !bytes.Equal(h.Sum(nil), want[:]) {
		return nil, &Error{Kind: Tampered, Op: "GetObject", Key: ref.Key, Err: fmt.Errorf("the bytes read (%d) do not hash to the reference's SHA-256", n)}
	}
	return buf.Bytes(), nil
}

// Verify reads ref's version through a hash, holding none of it, and
// compares its size and SHA-256 with ref's: for who checks an object of
// any size (`mcpfn audit verify`).
func (s *Store) Verify(ctx context.Context, ref *wire.ObjectRef) error {
	want, err := ref.Sum()
	if err != nil {
		return &Error{Kind: Refused, Op: "GetObject", Key: ref.Key, Err: err}
	}
	in := &s3.GetObjectInput{Bucket: aws.String(ref.Bucket), Key: aws.String(ref.Key)}
	if ref.VersionID != "" {
		in.VersionId = aws.String(ref.VersionID)
	}
	out, err := s.Client.GetObject(ctx, in)
	if err != nil {
		return classify("GetObject", ref.Key, err)
	}
	defer out.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if err != nil {
		return &Error{Kind: Unavailable, Op: "GetObject", Key: ref.Key, Err: err}
	}
	if n != ref.Size || !bytes.Equal(h.Sum(nil), want[:]) {
		return &Error{Kind: Tampered, Op: "GetObject", Key: ref.Key, Err: fmt.Errorf("%d bytes, sha256 %x; the reference says %d bytes, sha256 %s", n, h.Sum(nil), ref.Size, ref.SHA256)}
	}
	return nil
}

// Check makes sure ref's version is there and is what ref says, without
// reading it: S3's SHA-256 of the version (which S3 verified when it was
// put) and its length are compared with ref's. A version S3 has no
// SHA-256 for is read and hashed instead.
func (s *Store) Check(ctx context.Context, ref *wire.ObjectRef) error {
	want, err := ref.Sum()
	if err != nil {
		return &Error{Kind: Refused, Op: "HeadObject", Key: ref.Key, Err: err}
	}
	in := &s3.HeadObjectInput{Bucket: aws.String(ref.Bucket), Key: aws.String(ref.Key), ChecksumMode: types.ChecksumModeEnabled}
	if ref.VersionID != "" {
		in.VersionId = aws.String(ref.VersionID)
	}
	out, err := s.Client.HeadObject(ctx, in)
	if err != nil {
		return classify("HeadObject", ref.Key, err)
	}
	if n := aws.ToInt64(out.ContentLength); out.ContentLength != nil && n != ref.Size {
		return &Error{Kind: Tampered, Op: "HeadObject", Key: ref.Key, Err: fmt.Errorf("%d bytes, the reference says %d", n, ref.Size)}
	}
	if c := aws.ToString(out.ChecksumSHA256); c != "" && out.ChecksumType != types.ChecksumTypeComposite {
		if c != base64.StdEncoding.EncodeToString(want[:]) {
			return &Error{Kind: Tampered, Op: "HeadObject", Key: ref.Key, Err: errors.New("S3's SHA-256 of the version is not the reference's")}
		}
		return nil
	}
	_, err = s.Read(ctx, ref, 0)
	return err
}

// Link is a presigned GET of ref's version valid for ttl: the URL serves
// exactly that version, to whoever holds it, until it expires.
func (s *Store) Link(ctx context.Context, ref *wire.ObjectRef, ttl time.Duration, filename string) (string, error) {
	if s.Presign == nil {
		return "", &Error{Kind: Unavailable, Op: "presign", Key: ref.Key, Err: errors.New("no presigner")}
	}
	in := &s3.GetObjectInput{Bucket: aws.String(ref.Bucket), Key: aws.String(ref.Key)}
	if ref.VersionID != "" {
		in.VersionId = aws.String(ref.VersionID)
	}
	if filename != "" {
		// A download, never a page rendered from the bucket's origin.
		in.ResponseContentDisposition = aws.String(`attachment; filename="` + filename + `"`)
	}
	req, err := s.Presign.PresignGetObject(ctx, in, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", &Error{Kind: Unavailable, Op: "presign", Key: ref.Key, Err: err}
	}
	return req.URL, nil
}
