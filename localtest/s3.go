package localtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/s3front"
	"github.com/mcpfn/mcpfn/internal/s3standin"
)

// What the functions are given to reach the S3 stand-in as they reach S3:
// the AWS SDKs read AWS_ENDPOINT_URL_S3 and AWS_CA_BUNDLE themselves;
// AWS_S3_USE_PATH_STYLE is for the code that builds an S3 client (the SDK
// for Go has no such variable: set s3.Options.UsePathStyle from it).
const (
	EnvS3UsePathStyle = "AWS_S3_USE_PATH_STYLE"
	s3CAFile          = "s3-ca.pem"
)

// s3Wiring is the stack's S3: the stand-in behind the enforcing front, on
// TLS with a certificate of a CA made at start.
type s3Wiring struct {
	standin *s3standin.Server
	front   *s3front.Front
	srv     *http.Server
	url     string
	caPath  string
	roots   *x509.CertPool
	buckets map[string]string // logical id → local name

	// down are the object paths ("/bucket/key-prefix") S3Outage makes
	// unreachable, with how many outages hold each.
	mu   sync.Mutex
	down map[string]int
}

// serveHTTP is the endpoint: the front, unless an outage holds the path.
func (w *s3Wiring) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	if w.isDown(r.URL.Path) {
		// As an S3 that cannot be reached: the connection ends without
		// an answer (the SDK sees a connection error and retries).
		if hj, ok := rw.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		http.Error(rw, "unreachable", http.StatusServiceUnavailable)
		return
	}
	w.front.ServeHTTP(rw, r)
}

func (w *s3Wiring) isDown(p string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for prefix := range w.down {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// S3Outage makes the S3 endpoint unreachable for every request on a key of
// the bucket with the given logical id that starts with keyPrefix — as S3
// stopped mid-call would be, for that part of the bucket only, so the
// stack's other callers are unaffected — until end is called. A request
// in flight when it starts is served.
func (s *Stack) S3Outage(logicalID, keyPrefix string) (end func()) {
	w := s.s3
	p := "/" + w.buckets[logicalID] + "/" + keyPrefix
	w.mu.Lock()
	if w.down == nil {
		w.down = map[string]int{}
	}
	w.down[p]++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.down[p]--; w.down[p] <= 0 {
				delete(w.down, p)
			}
		})
	}
}

// listenS3 binds the S3 endpoint's port (before anything slow, as the
// other listeners) and makes its certificate: a CA of this run's, written
// to Dir/s3-ca.pem for the SDKs (AWS_CA_BUNDLE), and a certificate for
// loopback and the allowed host names.
func (s *Stack) listenS3() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.cfg.S3Addr)
	if err != nil {
		return nil, fmt.Errorf("localtest: S3 address (%s to move it): %w", EnvS3Addr, err)
	}
	w := &s3Wiring{caPath: filepath.Join(s.dir, s3CAFile)}
	cert, roots, err := localCertificate(w.caPath, s.cfg.InvokeAllowedHosts)
	if err != nil {
		ln.Close()
		return nil, err
	}
	w.roots = roots
	w.url = "https://" + ln.Addr().String()
	s.s3 = w
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

// localCertificate makes a CA and a server certificate it signs for
// localhost, 127.0.0.1, ::1 and hosts, valid 30 days; it writes the CA's
// certificate to caPath.
func localCertificate(caPath string, hosts []string) (tls.Certificate, *x509.CertPool, error) {
	fail := func(err error) (tls.Certificate, *x509.CertPool, error) {
		return tls.Certificate{}, nil, fmt.Errorf("localtest: the S3 endpoint's certificate: %w", err)
	}
	now := time.Now()
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
		return n
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "mcpfn local stack CA (this run only)"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fail(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "mcpfn local S3"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else if h != "" {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(caPath, caPEM, 0o644); err != nil {
		return fail(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, roots, nil
}

// startS3 starts the stand-in behind the front and creates the template's
// buckets, named as the template's names resolve them, with the versioning
// each declares (as the operator: `sam deploy` creates them).
func (s *Stack) startS3(ln net.Listener, names *localNames) error {
	w := s.s3
	var err error
	if w.standin, err = s3standin.New(filepath.Join(s.dir, "s3")); err != nil {
		return err
	}
	w.buckets = names.buckets
	owner := map[string]bool{}
	var created []string
	for _, id := range sortedKeys(names.buckets) {
		name := names.buckets[id]
		versioning, err := s.tmpl.BucketVersioning(id, names.vals)
		if err != nil {
			return fmt.Errorf("localtest: %w", err)
		}
		if err := w.standin.CreateBucket(name, versioning); err != nil {
			return fmt.Errorf("localtest: %w", err)
		}
		owner[name] = s.tmpl.BucketOwnerEnforced(id)
		if versioning != "" {
			name += " (versioning " + versioning + ")"
		}
		created = append(created, name)
	}
	// Bodies wait here while the front checks them; what a killed run
	// left is of no use.
	spool := filepath.Join(s.dir, "s3-spool")
	_ = os.RemoveAll(spool)
	if err := os.MkdirAll(spool, 0o700); err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	w.front = &s3front.Front{
		Upstream: w.standin.Handler(), Authority: s.iam.auth, AllowHosts: s.cfg.InvokeAllowedHosts, SpoolDir: spool,
		OwnerEnforced: func(bucket string) bool { return owner[bucket] },
		Denied:        func(who, action, resource, msg string) { s.iam.denied("s3", who, action, resource, msg) },
	}
	w.srv = &http.Server{Handler: http.HandlerFunc(w.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }()
	if len(created) == 0 {
		created = []string{"none"}
	}
	s.logf("S3 at %s (TLS, CA %s) with buckets %s", w.url, w.caPath, strings.Join(created, ", "))
	return nil
}

func (w *s3Wiring) close() error {
	if w == nil {
		return nil
	}
	if w.srv != nil {
		_ = w.srv.Close()
	}
	if w.standin != nil {
		return w.standin.Close()
	}
	return nil
}

// s3Environment is what a function is given to reach S3.
func (w *s3Wiring) environment() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_S3": w.url,
		"AWS_CA_BUNDLE":       w.caPath,
		EnvS3UsePathStyle:     "true",
	}
}

// S3URL is the stack's S3 endpoint (https, path-style): the front that
// checks each request's signature, presigned URLs and IAM before the
// stand-in sees it. Its certificate is signed by S3CAFile's CA.
func (s *Stack) S3URL() string { return s.s3.url }

// S3CAFile is the PEM file of the CA that signed the S3 endpoint's
// certificate (made at start): what AWS_CA_BUNDLE names for the functions,
// and what curl's --cacert takes.
func (s *Stack) S3CAFile() string { return s.s3.caPath }

// S3HTTPClient is an HTTP client that trusts the S3 endpoint's certificate:
// for fetching a presigned URL as a client of the stack would.
func (s *Stack) S3HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.s3.roots, MinVersion: tls.VersionTLS12}}}
}

// S3 returns an S3 client for S3URL with the operator's credentials.
func (s *Stack) S3() *s3.Client { return s.s3As(s.iam.operator) }

// S3As is an S3 client for S3URL signing with creds (a function's:
// FunctionCredentials; the gateway's: GatewayCredentials).
func (s *Stack) S3As(creds aws.Credentials) *s3.Client {
	return s3.New(s3.Options{
		Region: localRegion, BaseEndpoint: aws.String(s.s3.url), UsePathStyle: true,
		Credentials: credentials.StaticCredentialsProvider{Value: creds},
		HTTPClient:  s.S3HTTPClient(),
	})
}

func (s *Stack) s3As(id *iam.Identity) *s3.Client { return s.S3As(credentialsOf(id)) }

// Bucket returns the local name of the bucket with the given logical ID
// (e.g. "PayloadsBucket" → "payloadsbucket").
func (s *Stack) Bucket(logicalID string) string { return s.s3.buckets[logicalID] }

// s3Actions are the S3 actions the front authorizes (without "s3:"), for
// checkEvaluable.
func s3Actions() []string {
	out := make([]string, len(s3front.Actions))
	for i, a := range s3front.Actions {
		out[i] = strings.TrimPrefix(a, "s3:")
	}
	return slices.Clip(out)
}
