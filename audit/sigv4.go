//go:build mcpfn_otel

package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// xrayOTLPHost is X-Ray's OTLP endpoint, xray.<region>.amazonaws.com,
// which takes OTLP/HTTP only SigV4-signed.
var xrayOTLPHost = lazyRegexp(`^xray\.([a-z0-9-]+)\.amazonaws\.com$`)

// sigv4RegionOf returns the region of an X-Ray OTLP endpoint URL, or "".
func sigv4RegionOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	if m := xrayOTLPHost().FindStringSubmatch(u.Hostname()); m != nil {
		return m[1]
	}
	return ""
}

// sigv4Transport signs every request for X-Ray in region with the
// credentials of the function (its role, from the default AWS
// configuration), so the exporter can send to X-Ray's OTLP endpoint
// without a collector in between.
type sigv4Transport struct {
	base   http.RoundTripper
	creds  aws.CredentialsProvider
	signer *v4.Signer
	region string
}

func newSigV4Client(ctx context.Context, region string, creds aws.CredentialsProvider) (*http.Client, error) {
	if creds == nil {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("audit: aws config for signing OTLP: %w", err)
		}
		creds = cfg.Credentials
	}
	return &http.Client{Transport: &sigv4Transport{base: http.DefaultTransport, creds: creds, signer: v4.NewSigner(), region: region}}, nil
}

func (t *sigv4Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	sum := sha256.Sum256(body)
	signed := r.Clone(r.Context())
	signed.Body = io.NopCloser(bytes.NewReader(body))
	signed.ContentLength = int64(len(body))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	creds, err := t.creds.Retrieve(r.Context())
	if err != nil {
		return nil, fmt.Errorf("audit: credentials for signing OTLP: %w", err)
	}
	if err := t.signer.SignHTTP(r.Context(), creds, signed, hex.EncodeToString(sum[:]), "xray", t.region, time.Now()); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(signed)
}
