//go:build mcpfn_otel

package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestSigV4RegionOf(t *testing.T) {
	for ep, want := range map[string]string{
		"https://xray.eu-west-1.amazonaws.com/v1/traces":         "eu-west-1",
		"https://xray.us-east-1.amazonaws.com":                   "us-east-1",
		"http://localhost:4318":                                  "",
		"https://xray.eu-west-1.amazonaws.com.evil.test":         "",
		"https://collector.example/xray.us-east-1.amazonaws.com": "",
	} {
		if got := sigv4RegionOf(ep); got != want {
			t.Errorf("%s: %q, want %q", ep, got, want)
		}
	}
}

// Exports to X-Ray's OTLP endpoint are SigV4-signed for service xray: the
// receiving end re-signs what it got with the same key and time and gets
// the same signature.
func TestOTelExportIsSigV4Signed(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "token")
	var mu sync.Mutex
	var problems []string
	got := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got++
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/eu-west-1/xray/aws4_request") {
			problems = append(problems, "authorization "+auth)
		}
		at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		if err != nil {
			problems = append(problems, "date: "+err.Error())
			return
		}
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		check, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
		_, signedList, _ := strings.Cut(auth, "SignedHeaders=")
		signedList, _, _ = strings.Cut(signedList, ",")
		for _, h := range strings.Split(signedList, ";") {
			if v := r.Header.Values(h); len(v) > 0 {
				check.Header[http.CanonicalHeaderKey(h)] = v
			}
		}
		check.ContentLength = r.ContentLength
		c, _ := creds.Retrieve(context.Background())
		if err := v4.NewSigner().SignHTTP(context.Background(), c, check, hex.EncodeToString(sum[:]), "xray", "eu-west-1", at); err != nil {
			problems = append(problems, err.Error())
		}
		if check.Header.Get("Authorization") != auth {
			problems = append(problems, "signature differs: "+auth+" vs "+check.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	em, err := NewOTelEmitter(context.Background(), OTelConfig{Endpoint: srv.URL, SigV4Region: "eu-west-1", SigV4Credentials: aws.CredentialsProvider(creds)})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Shutdown(context.Background())
	em.EmitSpan(Span{TraceID: NewTraceID(time.Now()), ID: NewSpanID(), Name: "x", Start: time.Now(), End: time.Now()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := em.FlushSpans(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got != 1 || len(problems) > 0 {
		t.Fatalf("%d requests; %v", got, problems)
	}
}
