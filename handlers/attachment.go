package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// AttachmentsEnv names the environment variable holding the attachments
// bucket's name; the attachment tools declare it with their bucket access.
const AttachmentsEnv = "ATTACHMENTS_BUCKET"

// AttachmentPrefix is where attachments live in the bucket: each one is the
// object "attachments/<broadcastId>/<attachmentId>", a key of its own per
// attach, never overwritten. The tools' grants are confined to it.
const AttachmentPrefix = "attachments/"

// MaxAttachmentBytes bounds one attachment: 4 MiB, whose base64 (5.33 MiB)
// in a call's arguments still fits the 6 MB a Function URL request and a
// synchronous invoke carry.
const MaxAttachmentBytes = 4 << 20

// Attachment is the file attached to a broadcast: what it is, and where its
// bytes are.
type Attachment struct {
	Name        string `json:"name" dynamodbav:"name" jsonschema:"the file's name"`
	ContentType string `json:"contentType" dynamodbav:"contentType" jsonschema:"the file's media type"`
	Size        int64  `json:"size" dynamodbav:"size" jsonschema:"the file's size in bytes"`
	SHA256      string `json:"sha256" dynamodbav:"sha256" jsonschema:"the SHA-256 of the file's bytes (hex)"`
	AttachedAt  string `json:"attachedAt" dynamodbav:"attachedAt" jsonschema:"when it was attached (RFC 3339, UTC)"`
	// Key and VersionID are where its bytes are: the object in the
	// attachments bucket and the version that attach wrote, which every
	// read names, so the bytes read are the bytes attached even if the key
	// is written again. Storage, not API: the tools' answers leave them
	// out.
	Key       string `json:"-" dynamodbav:"key"`
	VersionID string `json:"-" dynamodbav:"versionId"`
}

// ObjectAPI is the part of the S3 client the store uses; *s3.Client
// implements it.
type ObjectAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// Errors of the attachments bucket; handlers turn them into tool errors.
var (
	// ErrAttachmentGone: the version an item names is no longer in the
	// bucket (deleted behind the item's back, or expired).
	ErrAttachmentGone = errors.New("handlers: the attachment's object is no longer in the bucket")
	// ErrAttachmentAltered: the bytes read are not those attached (their
	// size or SHA-256 differs from the item's).
	ErrAttachmentAltered = errors.New("handlers: the attachment's bytes differ from those attached")
)

// bucketError is a failure of the attachments bucket, so that toolError
// tells it from one of the table.
type bucketError struct {
	op  string
	err error
}

func (e *bucketError) Error() string {
	return "handlers: attachments bucket: " + e.op + ": " + e.err.Error()
}
func (e *bucketError) Unwrap() error { return e.err }

// attachmentKey is the object key of one attachment of a broadcast.
func attachmentKey(broadcastID, attachmentID string) string {
	return AttachmentPrefix + broadcastID + "/" + attachmentID
}

// storeAttachment writes data as a new version of a.Key, with S3 checking
// the SHA-256 the item will record, and returns that version's id.
func (s *Store) storeAttachment(ctx context.Context, a Attachment, data []byte) (string, error) {
	if s.objects == nil {
		return "", errNoBucket
	}
	sum, err := hex.DecodeString(a.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return "", fmt.Errorf("handlers: attachment SHA-256 %q is not hex", a.SHA256)
	}
	out, err := s.objects.PutObject(ctx, &s3.PutObjectInput{
		Bucket:             aws.String(s.bucket),
		Key:                aws.String(a.Key),
		Body:               bytes.NewReader(data),
		ContentLength:      aws.Int64(int64(len(data))),
		ContentType:        aws.String(a.ContentType),
		ContentDisposition: aws.String(mime.FormatMediaType("attachment", map[string]string{"filename": a.Name})),
		ChecksumSHA256:     aws.String(base64.StdEncoding.EncodeToString(sum)),
	})
	if err != nil {
		return "", &bucketError{"storing " + a.Key, err}
	}
	if v := aws.ToString(out.VersionId); v != "" && v != "null" {
		return v, nil
	}
	// An unversioned bucket: a read by version would fail, and an
	// overwrite would go unnoticed.
	return "", fmt.Errorf("handlers: bucket %s gave no version id for %s: the attachments bucket must be versioned", s.bucket, a.Key)
}

// errNoBucket: a tool that keeps attachments runs on a store without a
// bucket (its function was served with StoreFromEnv, not
// AttachmentStoreFromEnv).
var errNoBucket = errors.New("handlers: this store has no attachments bucket (serve the tool with AttachmentStoreFromEnv)")

// copyAttachment writes the bytes of a — the version the item names — to
// w as they arrive from the bucket, and checks them against the item: a
// missing version is ErrAttachmentGone, other bytes ErrAttachmentAltered.
// Never more than a.Size+1 bytes are read, whatever the object holds.
func (s *Store) copyAttachment(ctx context.Context, a Attachment, w io.Writer) error {
	if s.objects == nil {
		return errNoBucket
	}
	out, err := s.objects.GetObject(ctx, &s3.GetObjectInput{
		Bucket:    aws.String(s.bucket),
		Key:       aws.String(a.Key),
		VersionId: aws.String(a.VersionID),
	})
	if err != nil {
		if objectMissing(err) {
			return fmt.Errorf("%w: %w", ErrAttachmentGone, err)
		}
		return &bucketError{"reading " + a.Key, err}
	}
	defer out.Body.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(out.Body, a.Size+1))
	if err != nil {
		return &bucketError{"reading " + a.Key, err}
	}
	if n != a.Size || hex.EncodeToString(h.Sum(nil)) != a.SHA256 {
		return fmt.Errorf("%w: %s version %s", ErrAttachmentAltered, a.Key, a.VersionID)
	}
	return nil
}

// readAttachment returns the bytes of a, checked as copyAttachment checks
// them, in one slice of exactly their size.
func (s *Store) readAttachment(ctx context.Context, a Attachment) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, a.Size))
	if err := s.copyAttachment(ctx, a, buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dropObject hides the object key behind a delete marker: its versions
// stay in the (versioned) bucket until its lifecycle expires them, so a
// replaced or deleted attachment can still be recovered for a while, and
// no tool's role needs to delete a version for good.
func (s *Store) dropObject(ctx context.Context, key string) error {
	if s.objects == nil {
		return errNoBucket
	}
	if _, err := s.objects.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); err != nil {
		return &bucketError{"removing " + key, err}
	}
	return nil
}

// objectMissing reports whether a GetObject of one version failed because
// the version is not there. S3 answers 404 (NoSuchKey, NoSuchVersion) to a
// caller that may list the bucket, 403 AccessDenied to one that may not —
// and no tool's role may — and 405 when the version is a delete marker.
// The raw error stays in the audit row, so a real permission fault still
// shows there.
func objectMissing(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "NoSuchKey", "NoSuchVersion", "NotFound", "AccessDenied", "MethodNotAllowed":
		return true
	}
	return false
}
