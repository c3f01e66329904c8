package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/wire"
)

// The claim check (issue 22, docs/decisions/0037-claim-check.md): a result
// too large for the answer (or the task record) is written to the payloads
// bucket and the answer carries a reference; arguments the gateway stored
// are read from it before anything checks them. Nothing to do for a tool
// author: [Start] wires it from MCPFN_PAYLOADS_BUCKET, which `mcpfn
// template` gives every function.

// PayloadsAPI is the part of the S3 API the claim check calls; an
// *s3.Client has it.
type PayloadsAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// ClaimCheck says when a result leaves its answer for the payloads bucket.
// Zero fields keep their defaults ([DefaultClaimCheck]).
type ClaimCheck struct {
	// AnswerBytes: a result larger than this is stored, and the answer
	// carries its reference. Default 5 MiB, below Lambda's 6 MB buffered
	// answer and the first 6 MB of a streamed one (streamed faster than
	// the 2 MB/s that follow), leaving room for the envelope and a
	// stream's progress frames.
	AnswerBytes int
	// TaskBytes: the same for a task's result, which the task record
	// holds. Default 128 KiB: with the gateway storing a task's arguments
	// past 128 KiB too, a record stays well inside the task store's 350 KB
	// (DynamoDB's 400 KB item).
	TaskBytes int
	// BlobBytes: in a result that is stored, a binary block — an image,
	// audio, an embedded resource's blob — of at least this many bytes is
	// an object of its own, its raw bytes with its mimeType, so that the
	// gateway can link to the bytes themselves. Default 64 KiB.
	BlobBytes int
}

// DefaultClaimCheck is the claim check's defaults.
func DefaultClaimCheck() ClaimCheck {
	return ClaimCheck{AnswerBytes: 5 << 20, TaskBytes: 128 << 10, BlobBytes: 64 << 10}
}

// lambdaAnswerBytes is what Lambda lets a function answer (6 MB, 6,291,456
// bytes) less the envelope around the result: [Start]'s
// Limits.MaxAnswerBytes.
const lambdaAnswerBytes = 6<<20 - 4<<10

// WithPayloads gives the function the payloads bucket (claim check): it
// stores results past [ClaimCheck]'s thresholds there, and reads the
// arguments the gateway stored there. [Start] builds it from
// MCPFN_PAYLOADS_BUCKET with the function's own role.
func WithPayloads(bucket string, client PayloadsAPI) Option {
	return func(o *options) {
		o.payloads = &claimcheck.Store{Bucket: bucket, Client: client}
	}
}

// WithClaimCheck replaces [DefaultClaimCheck]; zero fields keep their
// default.
func WithClaimCheck(c ClaimCheck) Option {
	return func(o *options) {
		if c.AnswerBytes > 0 {
			o.claim.AnswerBytes = c.AnswerBytes
		}
		if c.TaskBytes > 0 {
			o.claim.TaskBytes = c.TaskBytes
		}
		if c.BlobBytes > 0 {
			o.claim.BlobBytes = c.BlobBytes
		}
	}
}

// payloadOptionsFromEnv is WithPayloads from MCPFN_PAYLOADS_BUCKET; none
// when it is unset.
func payloadOptionsFromEnv(awsConfig func() (aws.Config, error), getenv func(string) string) ([]Option, error) {
	bucket := strings.TrimSpace(getenv(claimcheck.EnvBucket))
	if bucket == "" {
		return nil, nil
	}
	cfg, err := awsConfig()
	if err != nil {
		return nil, err
	}
	return []Option{WithPayloads(bucket, claimcheck.NewClient(cfg, getenv))}, nil
}

// ArgumentsObject returns where the gateway stored the call's arguments,
// nil when they came inline: they were read from it, and checked against
// the call token, before step 2.
func (c *Call) ArgumentsObject() *wire.ObjectRef { return c.argsRef }

// ReceivedArguments returns the arguments as the call brought them (read
// from the payloads bucket when stored), before any BeforeToolCall hook
// replaced them: what the call token's argument digest covers.
func (c *Call) ReceivedArguments() json.RawMessage { return c.received }

// argumentLimit is the most arguments this function takes.
func (f *Function) argumentLimit() int {
	if n := f.tool.maxArgs; n > 0 {
		return n
	}
	return f.opts.limits.MaxArgumentBytes
}

// argsDigestOf is the call token digest a stored argument object stands
// for: its SHA-256, the gateway having stored the canonical form.
func argsDigestOf(ref *wire.ObjectRef) (string, error) {
	sum, err := ref.Sum()
	if err != nil {
		return "", err
	}
	return calltoken.DigestOfSHA256(sum), nil
}

// fetchArguments reads arguments the gateway stored, once the call token
// has verified that the reference's SHA-256 is the digest it was issued
// for: the bytes read must hash to it, so a swapped object is refused as a
// swapped argument is (token_wrong_arguments).
func (r *callRun) fetchArguments() error {
	ref := r.d.argsRef
	if ref == nil {
		return nil
	}
	store := r.f.opts.payloads
	if store == nil {
		return NewError(CodeUnavailable, "this call's arguments were stored in the payloads bucket, and this function has none (MCPFN_PAYLOADS_BUCKET)").
			WithCause(errors.New("an envelope with argumentsRef reached a function without a payloads bucket"))
	}
	wrong := func(err error) error {
		return refused(r.call, r.d, &calltoken.Error{Reason: calltoken.ReasonArguments, Detail: err.Error()})
	}
	if err := ref.Check(store.Bucket, wire.ArgsKey(r.f.tool.name, "")); err != nil {
		return wrong(err)
	}
	b, err := store.Read(r.ctx, ref, int64(r.f.argumentLimit()))
	switch claimcheck.KindOf(err) {
	case 0:
	case claimcheck.Tampered:
		return wrong(err)
	case claimcheck.Refused:
		return Errorf(CodePayloadTooLarge, "the arguments are %d bytes; this tool accepts at most %d", ref.Size, r.f.argumentLimit()).WithCause(err)
	case claimcheck.Missing:
		return NewError(CodeUnavailable, "this call's stored arguments are gone (expired or deleted) before the function read them").
			WithHint("call the tool again: the gateway stores the arguments anew").WithCause(err)
	default:
		return NewError(CodeUnavailable, "this call's arguments are stored in the payloads bucket, which the function cannot read right now (S3 unavailable)").
			WithHint("retry shortly").WithCause(err)
	}
	r.d.args = b
	r.call.Arguments, r.call.received, r.call.argsRef = b, b, ref
	return nil
}

// resultStore is where a call's result may go: the store, and the most its
// answer (or task record) may carry inline. Nil: the call answers inline
// whatever the size (no payloads bucket, or a caller that cannot read a
// reference: AgentCore Gateway, a direct JSON-RPC invoke).
type resultStore struct {
	store *claimcheck.Store
	limit int
	blob  int
	key   string // the result's key; blobs go next to it
	n     int    // blobs stored
}

func (r *callRun) resultStore() *resultStore {
	if r.d.source != SourceEnvelope || r.f.opts.payloads == nil {
		return nil
	}
	c := r.f.opts.claim
	limit := c.AnswerBytes
	if r.d.task != "" {
		limit = c.TaskBytes
	}
	return &resultStore{store: r.f.opts.payloads, limit: limit, blob: c.BlobBytes,
		key: wire.ResultKey(r.f.tool.name, r.call.ID, audit.NewAttemptID())}
}

// storeResult is the end of step 7: the result leaves the answer for the
// payloads bucket when it would not fit it (or a block asked to be a
// link), blobs first, then the result itself. A failure fails the call
// (UNAVAILABLE, naming S3): no reference to a partly written result is
// ever answered; what was written expires with the bucket's lifecycle.
func (r *callRun) storeResult() (Stage, error) {
	rs := r.resultStore()
	result := r.out.Result
	if r.content != nil {
		var err error
		if result, err = r.f.renderContent(r.ctx, r.content, rs); err != nil {
			return StageValidateOutput, r.storeFailed(err)
		}
		r.out.Result = result
	}
	if rs == nil {
		if most := r.f.opts.limits.MaxAnswerBytes; most > 0 && r.d.source == SourceEnvelope && len(result) > most {
			return StageValidateOutput, Errorf(CodePayloadTooLarge, "the result is %d bytes, more than an answer carries (%d), and this function has no payloads bucket to store it in (MCPFN_PAYLOADS_BUCKET)", len(result), most)
		}
		return StageValidateOutput, nil
	}
	if rs.n == 0 && len(result) <= rs.limit {
		return StageValidateOutput, nil
	}
	ref, err := rs.store.Put(r.ctx, rs.key, claimcheck.JSON, result)
	if err != nil {
		return StageValidateOutput, r.storeFailed(err)
	}
	r.out.ResultRef = &ref
	return StageValidateOutput, nil
}

// storeFailed is the error of a result that could not be stored. The
// handler has run: a destructive tool's call may have taken effect.
func (r *callRun) storeFailed(err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return err // the rendering's own failure
	}
	e := NewError(CodeUnavailable, "the tool's result is too large to answer inline, and the payloads bucket (S3) could not take it right now").WithCause(err)
	if r.f.tool.destructive && !r.f.tool.idem {
		e.Retryable = false
		return e.WithHint("this tool is destructive and the call took effect; only its result was lost: check before calling it again")
	}
	return e.WithHint("retry shortly")
}

// renderContent is Content as the result's JSON. When the result will be
// stored (it would not fit the answer, or a block asked to be a link) and
// rs can store, each binary block of at least rs.blob bytes — and each
// block marked AsLink — is written as an object of its own and stands in
// the result as a wire.StoredBlock: a 20 MB file is then one raw object,
// never 27 MB of base64 in a JSON document.
func (f *Function) renderContent(ctx context.Context, c *checkedContent, rs *resultStore) (json.RawMessage, error) {
	extract := false
	if rs != nil {
		size := 64
		for _, b := range c.Blocks {
			size += 64 + len(b.text) + len(b.uri) + len(b.mimeType) + (len(b.data)+2)/3*4
			extract = extract || (b.link && b.data != nil)
		}
		extract = extract || size > rs.limit
	}
	res := struct {
		Content           []any           `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	}{Content: make([]any, 0, len(c.Blocks)), StructuredContent: c.structured}
	for _, b := range c.Blocks {
		if !extract || b.data == nil || (!b.link && len(b.data) < rs.blob) {
			res.Content = append(res.Content, b.wire())
			continue
		}
		mime := b.mimeType
		if mime == "" {
			mime = "application/octet-stream"
		}
		ref, err := rs.store.Put(ctx, wire.BlobKey(rs.key, rs.n+1), mime, b.data)
		if err != nil {
			return nil, err
		}
		rs.n++
		res.Content = append(res.Content, wire.StoredBlock{Type: wire.StoredBlockType, Block: b.kind, MimeType: b.mimeType, URI: b.uri, Link: b.link, Object: ref})
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, NewError(CodeInternal, "Internal server error").WithCause(fmt.Errorf("the result cannot be marshalled: %w", err))
	}
	return out, nil
}
