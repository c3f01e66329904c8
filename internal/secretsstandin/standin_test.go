package secretsstandin

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// TestServesLoopbackAndNoBrowsers (issue 20, L4): a page in the
// developer's browser reaches the stand-in's loopback port too — by DNS
// rebinding (its own name, resolving to 127.0.0.1) or by sending requests
// from its own origin. Neither may read a call key or replace one, guard
// or no guard: a foreign Host, an Origin or a page's Sec-Fetch-Site is
// refused before the request is read. The AWS SDK is served.
func TestServesLoopbackAndNoBrowsers(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	key := s.Generate("BroadcastGetCallKey", 64)

	sm := secretsmanager.New(secretsmanager.Options{Region: Region, BaseEndpoint: aws.String(s.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	out, err := sm.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("BroadcastGetCallKey")})
	if err != nil || aws.ToString(out.SecretString) != key {
		t.Fatalf("the SDK: %v", err)
	}

	port := s.URL[strings.LastIndex(s.URL, ":")+1:]
	send := func(target, body, host string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+"/", strings.NewReader(body))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-amz-json-1.1")
		req.Header.Set("X-Amz-Target", "secretsmanager."+target)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const get = `{"SecretId":"BroadcastGetCallKey"}`
	const put = `{"SecretId":"BroadcastGetCallKey","SecretString":"chosen-by-the-page"}`
	for name, c := range map[string]struct {
		host   string
		header map[string]string
	}{
		"rebinding":            {"rebound.example:" + port, nil},
		"a page's fetch":       {"127.0.0.1:" + port, map[string]string{"Origin": "http://evil.example"}},
		"a page's no-cors":     {"127.0.0.1:" + port, map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}},
		"another local origin": {"127.0.0.1:" + port, map[string]string{"Sec-Fetch-Site": "same-site"}},
	} {
		if code, body := send("GetSecretValue", get, c.host, c.header); code != http.StatusForbidden || strings.Contains(body, key) || !strings.Contains(body, "AccessDeniedException") {
			t.Errorf("%s: GetSecretValue answered %d: %s", name, code, body)
		}
		if code, body := send("PutSecretValue", put, c.host, c.header); code != http.StatusForbidden {
			t.Errorf("%s: PutSecretValue answered %d: %s", name, code, body)
		}
	}
	if cur, _ := s.Current("BroadcastGetCallKey"); cur != key {
		t.Errorf("the call key was replaced: %q", cur)
	}
}
