package adapter_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/internal/claimtest"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// payloadIn asks the payload tool for a block of N bytes of Kind (text,
// blob, image), as a link when Link.
type payloadIn struct {
	N    int    `json:"n"`
	Kind string `json:"kind"`
	Link bool   `json:"link,omitempty"`
}

func payloadBytes(n int) []byte { return bytes.Repeat([]byte{0, 1, 2, 'x'}, n/4+1)[:n] }

func payloadTool(t testing.TB) *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[payloadIn, adapter.Content]{
		Name: "payload",
		Handler: func(_ context.Context, _ *adapter.Call, in payloadIn) (adapter.Content, error) {
			var b adapter.Block
			switch in.Kind {
			case "blob":
				b = adapter.BlobResource("file:///export.zip", "application/zip", payloadBytes(in.N))
			case "image":
				b = adapter.Image(payloadBytes(in.N), "image/png")
			default:
				b = adapter.Text(strings.Repeat("t", in.N))
			}
			if in.Link {
				b = b.AsLink()
			}
			return adapter.Content{Blocks: []adapter.Block{adapter.Text("head"), b}}, nil
		},
	})
}

// storedAnswer is a function's answer to an envelope: its result, or its
// result's reference.
type storedAnswer struct {
	Result    json.RawMessage `json:"result"`
	ResultRef *wire.ObjectRef `json:"resultRef"`
}

func answerOf(t testing.TB, raw []byte) storedAnswer {
	t.Helper()
	var a storedAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestAResultTooLargeToAnswerIsStored: past AnswerBytes a result goes to
// the payloads bucket and the answer carries only its reference; a large
// blob is an object of its own (its raw bytes, its mimeType) that the
// stored result names; a block asked to be a link is stored whatever its
// size; a small result stays inline; the row carries the stored result's
// object, size and SHA-256.
func TestAResultTooLargeToAnswerIsStored(t *testing.T) {
	store, _ := claimtest.Store(t)
	audited := &rows{}
	fn := newFunction(payloadTool(t), quietLogger(), adapter.WithAuditor(audited),
		adapter.WithPayloads(claimtest.Bucket, store.Client), adapter.WithClaimCheck(adapter.ClaimCheck{AnswerBytes: 4000, BlobBytes: 1000}))
	ctx := t.Context()

	// Small: inline, nothing stored.
	a := answerOf(t, invoke(t, fn, envelopeOf(t, "c-small", "payload", payloadIn{N: 100, Kind: "blob"}, nil), lambdaInvoke{}))
	if a.ResultRef != nil || !bytes.Contains(a.Result, []byte(`"blob":"`)) {
		t.Fatalf("a small result: %+v", a)
	}
	if row := audited.last(t); row.ResultObject != nil || row.Result == nil {
		t.Errorf("small row: %+v", row)
	}

	for _, tc := range []struct {
		name, callID string
		in           payloadIn
		blobs        int
	}{
		{"text", "c-text", payloadIn{N: 5000, Kind: "text"}, 0},
		{"blob", "c-blob", payloadIn{N: 5000, Kind: "blob"}, 1},
		{"a small image asked to be a link", "c-link", payloadIn{N: 10, Kind: "image", Link: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := answerOf(t, invoke(t, fn, envelopeOf(t, tc.callID, "payload", tc.in, nil), lambdaInvoke{}))
			ref := a.ResultRef
			if ref == nil || a.Result != nil {
				t.Fatalf("answer %+v: want only a reference", a)
			}
			if err := ref.Check(claimtest.Bucket, "payload/results/"+tc.callID+"/"); err != nil || ref.VersionID == "" || ref.ContentType != claimcheck.JSON {
				t.Fatalf("reference %+v: %v", ref, err)
			}
			doc, err := store.Read(ctx, ref, 0)
			if err != nil {
				t.Fatal(err)
			}
			var sr struct {
				Content []json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(doc, &sr); err != nil || len(sr.Content) != 2 {
				t.Fatalf("stored result %.200s: %v", doc, err)
			}
			var sb wire.StoredBlock
			_ = json.Unmarshal(sr.Content[1], &sb)
			switch {
			case tc.blobs == 0 && sb.Type == wire.StoredBlockType:
				t.Errorf("a text block was stored apart: %s", sr.Content[1])
			case tc.blobs == 1:
				if sb.Type != wire.StoredBlockType || sb.Object.Key != ref.Key+".1" || sb.Link != tc.in.Link {
					t.Fatalf("block %s: want a stored block beside the result", sr.Content[1])
				}
				data, err := store.Read(ctx, &sb.Object, 0)
				if err != nil || !bytes.Equal(data, payloadBytes(tc.in.N)) || sb.Object.ContentType != sb.MimeType {
					t.Fatalf("the stored blob: %d bytes, content type %s (block's %s), %v", len(data), sb.Object.ContentType, sb.MimeType, err)
				}
			}
			row := audited.last(t)
			if row.ResultObject == nil || row.ResultObject.Key != ref.Key || row.ResultObject.VersionID != ref.VersionID ||
				row.ResultSHA256 != hexSum(doc) || row.ResultBytes != len(doc) || !row.OK {
				t.Errorf("row %+v", row)
			}
		})
	}

	// A direct JSON-RPC invoke cannot follow a reference: inline.
	raw := invoke(t, fn, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payload","arguments":{"n":5000,"kind":"blob"}}}`), lambdaInvoke{})
	if bytes.Contains(raw, []byte("resultRef")) || !bytes.Contains(raw, []byte(`"blob":"`)) {
		t.Errorf("a JSON-RPC invoke got %.200s", raw)
	}
}

// TestAResultThatCannotBeStoredFailsClearly: S3 unreachable — the call
// fails UNAVAILABLE (retryable) naming the payloads bucket, answers no
// reference, and its row says why.
func TestAResultThatCannotBeStoredFailsClearly(t *testing.T) {
	down := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""), RetryMaxAttempts: 1})
	audited := &rows{}
	fn := newFunction(payloadTool(t), quietLogger(), adapter.WithAuditor(audited),
		adapter.WithPayloads("payloads", down), adapter.WithClaimCheck(adapter.ClaimCheck{AnswerBytes: 1000}))
	raw := invoke(t, fn, envelopeOf(t, "c-down", "payload", payloadIn{N: 5000, Kind: "blob"}, nil), lambdaInvoke{})
	if bytes.Contains(raw, []byte("resultRef")) {
		t.Fatalf("answered a reference: %s", raw)
	}
	res, _ := envelopeResult(t, raw)
	b := res.errorBody(t)
	if b.Error != string(adapter.CodeUnavailable) || !b.Retryable || !strings.Contains(b.Message, "payloads bucket (S3)") {
		t.Errorf("error %+v", b)
	}
	row := audited.last(t)
	if row.OK || row.ErrorCode != string(adapter.CodeUnavailable) || !strings.Contains(row.RawError, "S3 unavailable: PutObject payload/results/c-down/") || row.ResultObject != nil {
		t.Errorf("row %+v", row)
	}
}

// TestAResultPastAnAnswerWithoutABucketIsRefusedClearly: a function with
// no payloads bucket and Lambda's answer limit (as Start serves it) fails a
// result Lambda could not answer, instead of leaving Lambda to fail the
// invocation; served in process (New's default) it answers it inline.
func TestAResultPastAnAnswerWithoutABucketIsRefusedClearly(t *testing.T) {
	fn := newFunction(payloadTool(t), quietLogger(), adapter.WithLimits(adapter.Limits{MaxAnswerBytes: 6 << 20}))
	res, _ := envelopeResult(t, invoke(t, fn, envelopeOf(t, "c-big", "payload", payloadIn{N: 7 << 20, Kind: "text"}, nil), lambdaInvoke{}))
	if b := res.errorBody(t); b.Error != string(adapter.CodePayloadTooLarge) || !strings.Contains(b.Message, "MCPFN_PAYLOADS_BUCKET") {
		t.Errorf("error %+v", b)
	}
	a := answerOf(t, invoke(t, newFunction(payloadTool(t), quietLogger()), envelopeOf(t, "c-big2", "payload", payloadIn{N: 7 << 20, Kind: "text"}, nil), lambdaInvoke{}))
	if a.ResultRef != nil || len(a.Result) < 7<<20 {
		t.Errorf("in process: %d bytes inline", len(a.Result))
	}
}

// echoIn is a large argument.
type echoIn struct {
	Data string `json:"data"`
}

type echoOut struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func echoTool(t testing.TB) *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[echoIn, echoOut]{
		Name: "echo", MaxArgumentBytes: 3 << 20,
		Handler: func(_ context.Context, _ *adapter.Call, in echoIn) (echoOut, error) {
			return echoOut{len(in.Data), hexSum([]byte(in.Data))}, nil
		},
	})
}

// refEnvelope is an envelope whose arguments are stored at ref, with a call
// token over signedArgs (the arguments the gateway was sent).
func refEnvelope(t testing.TB, callID string, ref *wire.ObjectRef, signedArgs []byte) []byte {
	return mustJSON(t, wire.Envelope{
		Version: wire.EnvelopeVersion, CallID: callID,
		Params:    wire.EnvelopeParams{Name: "echo", ArgumentsRef: ref},
		CallToken: lambdatest.Token(testFunction, "echo", callID, nil, signedArgs),
	})
}

// TestStoredArgumentsReachTheHandlerOnlyAsTheTokenSays: arguments the
// gateway stored (canonical form) are read before validation and reach
// the handler byte for byte — past the default 2 MiB, as the tool
// declared; a version that is gone is a clear, retryable error; a swapped
// object, whether its reference tells the truth about
// it or not, and a reference outside the tool's own arguments, are refused
// token_wrong_arguments.
func TestStoredArgumentsReachTheHandlerOnlyAsTheTokenSays(t *testing.T) {
	store, _ := claimtest.Store(t)
	audited := &rows{}
	fn := newFunction(echoTool(t), quietLogger(), adapter.WithAuditor(audited), adapter.WithPayloads(claimtest.Bucket, store.Client))
	ctx := t.Context()
	data := strings.Repeat("0123456789abcdef", (5<<20)/32) // 2.5 MiB
	args := mustJSON(t, echoIn{Data: data})
	ref, err := store.Put(ctx, wire.ArgsKey("echo", "c-args"), claimcheck.JSON, calltoken.Canonical(args))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			StructuredContent echoOut `json:"structuredContent"`
		} `json:"result"`
	}
	raw := invoke(t, fn, refEnvelope(t, "c-args", &ref, args), lambdaInvoke{})
	if err := json.Unmarshal(raw, &out); err != nil || out.Result.StructuredContent.SHA256 != hexSum([]byte(data)) {
		t.Fatalf("the handler got %+v, want %d bytes, sha256 %s: %.300s", out.Result.StructuredContent, len(data), hexSum([]byte(data)), raw)
	}
	if row := audited.last(t); row.ArgsObject == nil || row.ArgsObject.Key != ref.Key || row.ArgsSHA256 != ref.SHA256 || row.ArgsBytes != ref.Size {
		t.Errorf("row %+v", row)
	}

	swapped := mustJSON(t, echoIn{Data: "something else"})
	other, err := store.Put(ctx, wire.ArgsKey("echo", "c-args"), claimcheck.JSON, calltoken.Canonical(swapped))
	if err != nil {
		t.Fatal(err)
	}
	gone := ref
	gone.VersionID = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	res, _ := envelopeResult(t, invoke(t, fn, refEnvelope(t, "c-args", &gone, args), lambdaInvoke{}))
	if b := res.errorBody(t); b.Error != string(adapter.CodeUnavailable) || !strings.Contains(b.Message, "gone (expired or deleted)") || !b.Retryable {
		t.Errorf("stored arguments gone: %+v", b)
	}

	lying := other
	lying.SHA256, lying.Size = ref.SHA256, ref.Size
	elsewhere := ref
	elsewhere.Key = "other/args/c-args"
	for name, r := range map[string]*wire.ObjectRef{"swapped, honest reference": &other, "swapped, lying reference": &lying, "another tool's arguments": &elsewhere} {
		res, _ := envelopeResult(t, invoke(t, fn, refEnvelope(t, "c-args", r, args), lambdaInvoke{}))
		var d struct {
			Reason string `json:"reason"`
		}
		b := res.errorBody(t)
		_ = json.Unmarshal(b.Details, &d)
		if b.Error != string(adapter.CodeUnauthorized) || d.Reason != string(calltoken.ReasonArguments) {
			t.Errorf("%s: %+v, want UNAUTHORIZED %s", name, b, calltoken.ReasonArguments)
		}
	}
}

// TestMaxArgumentBytesIsDeclaredAndBounded: the declaration carries it to
// the catalog (the gateway's body limit for the tool), a value past what a
// Function URL request carries is refused at Define.
func TestMaxArgumentBytesIsDeclaredAndBounded(t *testing.T) {
	d := echoTool(t).Declaration()
	if d.MaxArgumentBytes != 3<<20 {
		t.Fatalf("declaration %+v", d)
	}
	back, err := adapter.ToolFromDeclaration(d)
	if err != nil || back.MaxArgumentBytes() != 3<<20 {
		t.Fatalf("from the declaration: %v, %v", back, err)
	}
	if b, _ := json.Marshal(widgetTool(t).Declaration()); bytes.Contains(b, []byte("maxArgumentBytes")) {
		t.Errorf("a tool that declares nothing: %s", b)
	}
	_, err = adapter.Define(adapter.ToolDef[echoIn, echoOut]{Name: "huge", MaxArgumentBytes: adapter.MaxArgumentBytesLimit + 1,
		Handler: func(context.Context, *adapter.Call, echoIn) (echoOut, error) { return echoOut{}, nil }})
	if err == nil || !strings.Contains(err.Error(), "Function URL") {
		t.Errorf("past the limit: %v", err)
	}
}
