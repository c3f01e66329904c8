package localtest_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/internal/s3probe"
)

// The S3 of the local stack as the functions and the gateway reach it: the
// stand-in behind the front that enforces the template's IAM, over TLS,
// through the AWS SDK configured from the environment the stack gives.

// s3ProbeFunction serves the s3probe fixture, which calls S3 from inside
// its function with its role (the one a tool named s3probe gets).
var s3ProbeFunction = catalog.FunctionID(s3probe.Name)

func s3Functions() []localtest.FunctionSpec {
	return []localtest.FunctionSpec{{Name: s3ProbeFunction, Package: "./localtest/internal/s3probe/function", Tool: s3probe.Name}}
}

// s3call calls the s3probe tool through the gateway and returns what S3
// answered its function.
func s3call(t *testing.T, cs *mcp.ClientSession, in s3probe.Input) s3probe.Output {
	t.Helper()
	b, _ := json.Marshal(in)
	var args map[string]any
	_ = json.Unmarshal(b, &args)
	out := call(t, cs, s3probe.Name, args)
	b, _ = json.Marshal(out)
	var o s3probe.Output
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func sha256b64(b []byte) string {
	s := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

func s3Code(err error) string {
	var api smithy.APIError
	if err == nil {
		return ""
	}
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return "not an S3 error: " + err.Error()
}

// TestS3AFunctionReachesItsOwnPrefixesOnly: a tool function, from inside
// the emulator with its role's session and the SDK configured from its
// environment (AWS_ENDPOINT_URL_S3, AWS_CA_BUNDLE, MCPFN_PAYLOADS_BUCKET),
// writes its result with a SHA-256 S3 verifies and reads it back (S3
// returns the checksum), and is refused with S3's AccessDenied writing
// another tool's result, its own arguments, or reading a key that does not
// exist (no s3:ListBucket, so S3 says nothing of which keys exist).
func TestS3AFunctionReachesItsOwnPrefixesOnly(t *testing.T) {
	cs := connect(t, "s3-user")
	data := "a result too large for the envelope " + strings.Repeat("x", 1000)
	key := s3probe.Name + "/results/" + t.Name() + "/a1"
	put := s3call(t, cs, s3probe.Input{Op: "put", Key: key, Data: data})
	if put.Code != "ok" || put.VersionID == "" || put.SHA256 != sha256b64([]byte(data)) {
		t.Fatalf("put of its own result: %+v", put)
	}
	got := s3call(t, cs, s3probe.Input{Op: "get", Key: key, VersionID: put.VersionID})
	if got.Code != "ok" || got.Data != data || got.SHA256 != put.SHA256 {
		t.Fatalf("get of its own result: %+v", got)
	}
	for name, in := range map[string]s3probe.Input{
		"another tool's result": {Op: "put", Key: "broadcast_get/results/" + t.Name() + "/a1", Data: "forged"},
		"its own arguments":     {Op: "put", Key: s3probe.Name + "/args/" + t.Name(), Data: "forged"},
		"another tool's args":   {Op: "get", Key: "broadcast_get/args/" + t.Name()},
		"a key that is not":     {Op: "get", Key: s3probe.Name + "/results/" + t.Name() + "/none"},
		"outside every prefix":  {Op: "put", Key: "shared/" + t.Name(), Data: "x"},
	} {
		if out := s3call(t, cs, in); out.Code != "AccessDenied" {
			t.Errorf("%s: %+v, want AccessDenied", name, out)
		}
	}
}

// TestACompromisedFunctionCannotReachAnotherToolsPayloads: with a tool
// function's own credentials, as Lambda hands them to it, no other tool's
// results or arguments can be read, written or deleted — and its own
// results can (so the refusals are the policy's).
func TestACompromisedFunctionCannotReachAnotherToolsPayloads(t *testing.T) {
	ctx := t.Context()
	c := stack.S3As(attackerCreds(t))
	bucket := stack.Bucket(samgen.PayloadsBucket)
	own := attackerTool + "/results/" + t.Name() + "/a1"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(own), Body: strings.NewReader("mine"),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256}); err != nil {
		t.Fatalf("its own result: %v", err)
	}
	victim := "broadcast_delete/results/" + t.Name() + "/a1"
	for name, call := range map[string]func() error{
		"write a victim's result": func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(victim), Body: strings.NewReader("forged")})
			return err
		},
		"read a victim's result": func() error {
			_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(victim)})
			return err
		},
		"write a victim's arguments": func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("broadcast_delete/args/x"), Body: strings.NewReader("forged")})
			return err
		},
		"delete its own result": func() error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(own)})
			return err
		},
		"list the bucket": func() error {
			_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
			return err
		},
	} {
		if code := s3Code(call()); code != "AccessDenied" {
			t.Errorf("%s: %s, want AccessDenied", name, code)
		}
	}
	// Every refusal is in the IAM log, as S3's.
	b, err := os.ReadFile(stack.IAMLogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"service":"s3"`) || !strings.Contains(string(b), "s3:PutObject") {
		t.Errorf("the IAM log has no S3 refusal:\n%.2000s", b)
	}
}

// attackerTool is the tool of the attacker function (iam_test.go).
const attackerTool = "broadcast_get"

// TestS3TheGatewaysRoleIsTheContracts: the gateway's role stores a tool's
// arguments under its args/ (which the tool's function then reads) and
// reads what the tool stored under results/, and does nothing else: no
// write of a result, no read of arguments, nothing under a name that is no
// tool of the catalog.
func TestS3TheGatewaysRoleIsTheContracts(t *testing.T) {
	ctx := t.Context()
	gw := stack.S3As(stack.GatewayCredentials())
	bucket := stack.Bucket(samgen.PayloadsBucket)
	cs := connect(t, "s3-gateway")
	args := `{"text":"arguments past what one invoke carries"}`
	argsKey := s3probe.Name + "/args/" + t.Name()
	if _, err := gw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(argsKey), Body: strings.NewReader(args),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256, ContentType: aws.String("application/json")}); err != nil {
		t.Fatalf("the gateway stores a tool's arguments: %v", err)
	}
	if got := s3call(t, cs, s3probe.Input{Op: "get", Key: argsKey}); got.Code != "ok" || got.Data != args {
		t.Fatalf("the tool reads them: %+v", got)
	}
	resultKey := s3probe.Name + "/results/" + t.Name() + "/a1"
	put := s3call(t, cs, s3probe.Input{Op: "put", Key: resultKey, Data: "the result"})
	if put.Code != "ok" {
		t.Fatalf("the tool stores its result: %+v", put)
	}
	out, err := gw.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(resultKey), VersionId: aws.String(put.VersionID), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatalf("the gateway reads the result (by version): %v", err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "the result" || aws.ToString(out.ChecksumSHA256) != put.SHA256 {
		t.Fatalf("the gateway read %q, checksum %q", b, aws.ToString(out.ChecksumSHA256))
	}
	for name, call := range map[string]func() error{
		"write a result": func() error {
			_, err := gw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(resultKey), Body: strings.NewReader("forged")})
			return err
		},
		"read arguments": func() error {
			_, err := gw.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(argsKey)})
			return err
		},
		"write under no tool's name": func() error {
			_, err := gw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("nosuchtool/args/x"), Body: strings.NewReader("x")})
			return err
		},
		"delete arguments": func() error {
			_, err := gw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(argsKey)})
			return err
		},
	} {
		if code := s3Code(call()); code != "AccessDenied" {
			t.Errorf("the gateway may %s: %s", name, code)
		}
	}
}

// TestS3APresignedURLWorksUntilItExpires: a GET the gateway presigns for a
// tool's result serves the bytes to a plain HTTP client (and to a
// browser's request, without CORS headers); the same URL for another key,
// or one whose X-Amz-Date + X-Amz-Expires has passed, is refused with S3's
// error XML.
func TestS3APresignedURLWorksUntilItExpires(t *testing.T) {
	ctx := t.Context()
	cs := connect(t, "s3-presign")
	key := s3probe.Name + "/results/" + t.Name() + "/a1"
	put := s3call(t, cs, s3probe.Input{Op: "put", Key: key, Data: "bytes a client fetches itself"})
	if put.Code != "ok" {
		t.Fatal(put)
	}
	bucket := stack.Bucket(samgen.PayloadsBucket)
	req, err := s3.NewPresignClient(stack.S3As(stack.GatewayCredentials())).PresignGetObject(ctx,
		&s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(put.VersionID)}, s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(u string, header http.Header) (int, string, http.Header) {
		t.Helper()
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			r.Header[k] = v
		}
		res, err := stack.S3HTTPClient().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	if status, body, _ := fetch(req.URL, nil); status != 200 || body != "bytes a client fetches itself" {
		t.Fatalf("the presigned URL: %d %s", status, body)
	}
	status, body, h := fetch(req.URL, http.Header{"Origin": {"https://chat.example"}, "Sec-Fetch-Site": {"cross-site"}})
	if status != 200 || body != "bytes a client fetches itself" || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a browser's fetch: %d %q, Access-Control-Allow-Origin %q", status, body, h.Get("Access-Control-Allow-Origin"))
	}
	tampered, _ := url.Parse(req.URL)
	tampered.Path = "/" + bucket + "/" + s3probe.Name + "/results/" + t.Name() + "/other"
	if status, body, _ := fetch(tampered.String(), nil); status != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
		t.Errorf("tampered: %d %s", status, body)
	}
	// Expired: signed two minutes ago, valid for one.
	expired := presignAt(t, stack.GatewayCredentials(), stack.S3URL()+"/"+bucket+"/"+key, time.Minute, time.Now().Add(-2*time.Minute))
	if status, body, _ := fetch(expired, nil); status != 403 || !strings.Contains(body, "<Code>AccessDenied</Code><Message>Request has expired</Message>") {
		t.Errorf("expired: %d %s", status, body)
	}
	// The same, still valid, is served: only the date made the difference.
	valid := presignAt(t, stack.GatewayCredentials(), stack.S3URL()+"/"+bucket+"/"+key, 3*time.Minute, time.Now().Add(-2*time.Minute))
	if status, _, _ := fetch(valid, nil); status != 200 {
		t.Errorf("signed two minutes ago for three: %d", status)
	}
}

// presignAt presigns a GET of target as the SDK's S3 presigner does, signed
// at signedAt for expires.
func presignAt(t *testing.T, creds aws.Credentials, target string, expires time.Duration, signedAt time.Time) string {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := r.URL.Query()
	q.Set("X-Amz-Expires", strconv.Itoa(int(expires/time.Second)))
	r.URL.RawQuery = q.Encode()
	u, _, err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
		PresignHTTP(context.Background(), creds, r, "UNSIGNED-PAYLOAD", "s3", "us-east-1", signedAt)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestS3TheTemplatesBucketsAreCreated: the payloads bucket exists at start,
// named after its logical id, versioned as the template declares it.
func TestS3TheTemplatesBucketsAreCreated(t *testing.T) {
	bucket := stack.Bucket(samgen.PayloadsBucket)
	if bucket != "payloadsbucket" {
		t.Errorf("the payloads bucket is named %q locally", bucket)
	}
	v, err := stack.S3().GetBucketVersioning(t.Context(), &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil || v.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("versioning %v, %v", v, err)
	}
}

// TestS3AHundredMegabyteObjectRoundTripsInBoundedMemory: 100 MB written
// and read back through the front and the stand-in — TLS, the aws-chunked
// body with its SHA-256 trailer, the check into a spool file, the
// stand-in's file — comes back byte for byte, while the heap of the
// process (client, front and stand-in all in it) grows by a small part of
// the object: nothing holds it whole. The figures are docs/benchmarks.md's.
func TestS3AHundredMegabyteObjectRoundTripsInBoundedMemory(t *testing.T) {
	const size = 100 << 20
	creds, ok := stack.FunctionCredentials(s3ProbeFunction)
	if !ok {
		t.Fatal("no s3probe function")
	}
	c := stack.S3As(creds)
	bucket, key := stack.Bucket(samgen.PayloadsBucket), s3probe.Name+"/results/"+t.Name()+"/a1"

	runtime.GC()
	peak := newHeapPeak()
	// Linux: the peak RSS restarts from the current one.
	resetPeakRSS := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	var rssBefore int64
	if resetPeakRSS {
		rssBefore = procStatusMiB(t, "VmRSS:")
	}
	start := time.Now()
	src := newPattern(size, peak)
	put, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: src,
		ContentLength: aws.Int64(size), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		t.Fatal(err)
	}
	putTook := time.Since(start)
	if aws.ToString(put.ChecksumSHA256) != base64.StdEncoding.EncodeToString(src.sum.Sum(nil)) {
		t.Fatalf("S3 verified checksum %q, the bytes' is another", aws.ToString(put.ChecksumSHA256))
	}
	start = time.Now()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: put.VersionId, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(&observed{w: got, peak: peak}, out.Body)
	out.Body.Close()
	if err != nil || n != size {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	getTook := time.Since(start)
	if !bytes.Equal(got.Sum(nil), src.sum.Sum(nil)) {
		t.Fatal("the object read back is not the one written")
	}
	grew := int64(peak.max) - int64(peak.base)
	t.Logf("100 MiB object: put %v, get %v; heap objects %d MiB before, peak %d MiB during (+%d MiB)",
		putTook.Round(time.Millisecond), getTook.Round(time.Millisecond), peak.base>>20, peak.max>>20, grew>>20)
	if resetPeakRSS {
		peakRSS := procStatusMiB(t, "VmHWM:")
		t.Logf("RSS of the test process %d MiB before, peak %d MiB during (+%d MiB)", rssBefore, peakRSS, peakRSS-rssBefore)
	}
	if grew > 32<<20 {
		t.Errorf("the heap grew by %d MiB for a %d MiB object: something holds it whole", grew>>20, size>>20)
	}
}

// heapPeak samples the live heap (runtime/metrics) at points of the
// transfer — every few MiB read or written — and keeps the largest.
type heapPeak struct {
	base, max uint64
	sample    []metrics.Sample
}

func newHeapPeak() *heapPeak {
	p := &heapPeak{sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	p.base = p.read()
	p.max = p.base
	return p
}

func (p *heapPeak) read() uint64 {
	metrics.Read(p.sample)
	return p.sample[0].Value.Uint64()
}

func (p *heapPeak) observe() { p.max = max(p.max, p.read()) }

// pattern is size bytes made of a random MiB repeated, each copy numbered,
// hashed as it is read, the heap sampled every 4 MiB.
type pattern struct {
	block      []byte
	size, off  int64
	sum        hash.Hash
	peak       *heapPeak
	nextSample int64
}

func newPattern(size int64, peak *heapPeak) *pattern {
	b := make([]byte, 1<<20)
	_, _ = rand.Read(b)
	return &pattern{block: b, size: size, sum: sha256.New(), peak: peak}
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) && p.off < p.size {
		i := p.off % int64(len(p.block))
		k := copy(b[n:], p.block[i:min(int64(len(p.block)), i+p.size-p.off)])
		if i == 0 && k >= 8 {
			binary.BigEndian.PutUint64(b[n:], uint64(p.off))
		}
		n += k
		p.off += int64(k)
	}
	p.sum.Write(b[:n])
	if p.off >= p.nextSample {
		p.peak.observe()
		p.nextSample += 4 << 20
	}
	return n, nil
}

type observed struct {
	w       io.Writer
	n, next int64
	peak    *heapPeak
}

func (o *observed) Write(b []byte) (int, error) {
	o.n += int64(len(b))
	if o.n >= o.next {
		o.peak.observe()
		o.next += 4 << 20
	}
	return o.w.Write(b)
}

// procStatusMiB is a size field of /proc/self/status (VmRSS, VmHWM: the
// peak since clear_refs reset it) in MiB.
func procStatusMiB(t *testing.T, field string) int64 {
	return procStatusMiBOf(t, 0, field)
}

// procStatusMiBOf is a field of /proc/<pid>/status in MiB (pid 0: this
// process).
func procStatusMiBOf(t *testing.T, pid int, field string) int64 {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb >> 10
		}
	}
	return 0
}

// TestS3RefusesBrowsersAndForeignHosts: the S3 endpoint, like every local
// endpoint, refuses a foreign Host (DNS rebinding) and what a browser
// sends for a page before it reads a signature; the one exception is a
// presigned GET (TestS3APresignedURLWorksUntilItExpires).
func TestS3RefusesBrowsersAndForeignHosts(t *testing.T) {
	bucket := stack.Bucket(samgen.PayloadsBucket)
	for name, tc := range map[string]struct {
		host   string
		header http.Header
		want   string
	}{
		"a foreign Host":     {host: "rebound.example", want: "loopback only"},
		"an Origin":          {header: http.Header{"Origin": {"https://evil.example"}}, want: "browser requests (Origin)"},
		"a cross-site fetch": {header: http.Header{"Sec-Fetch-Site": {"cross-site"}}, want: "browser requests (Sec-Fetch-Site)"},
		"no signature":       {want: "<Message>Access Denied</Message>"},
	} {
		r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stack.S3URL()+"/"+bucket+"/"+s3probe.Name+"/results/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.host != "" {
			r.Host = tc.host
		}
		for k, v := range tc.header {
			r.Header[k] = v
		}
		res, err := stack.S3HTTPClient().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "<Code>AccessDenied</Code>") || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %s", name, res.StatusCode, b)
		}
	}
}
