package localtest_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/mcpfn/mcpfn/localtest"
)

// The Invoke API runs any function it serves for whoever reaches it: a web
// page in the developer's browser must not (DNS rebinding, cross-site form
// posts), while the AWS SDK must.
func TestInvokeAPIRefusesBrowsersAndForeignHosts(t *testing.T) {
	u, _ := url.Parse(stack.InvokeURL())
	_, port, _ := strings.Cut(u.Host, ":")
	path := stack.InvokeURL() + "/2015-03-31/functions/NoSuchFunction/invocations"
	do := func(host string, header map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
		req.Host = host
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType")
	}
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	for _, c := range []struct {
		name   string
		host   string
		header map[string]string
		want   int
	}{
		// Past the checks: on to the signature, which these unsigned
		// requests lack (403 MissingAuthenticationTokenException).
		{"loopback address", "127.0.0.1:" + port, octet, http.StatusForbidden},
		{"localhost", "localhost:" + port, octet, http.StatusForbidden},
		{"IPv6 loopback", "[::1]:" + port, octet, http.StatusForbidden},
		{"configured host", "invoke.mcpfn.test:" + port, octet, http.StatusForbidden},
		{"JSON", "127.0.0.1:" + port, map[string]string{"Content-Type": "application/json"}, http.StatusForbidden},
		{"no content type", "127.0.0.1:" + port, nil, http.StatusForbidden},
		// Refused.
		{"rebound host", "evil.example:" + port, octet, http.StatusForbidden},
		{"origin", "127.0.0.1:" + port, map[string]string{"Content-Type": "application/octet-stream", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"fetch metadata", "127.0.0.1:" + port, map[string]string{"Content-Type": "application/octet-stream", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"form post", "127.0.0.1:" + port, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"text post", "127.0.0.1:" + port, map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, http.StatusUnsupportedMediaType},
		{"multipart post", "127.0.0.1:" + port, map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, http.StatusUnsupportedMediaType},
	} {
		got, code := do(c.host, c.header)
		if got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
		// Refused by the browser checks: AccessDeniedException; past them,
		// refused for want of a signature.
		refused := c.want != http.StatusForbidden || c.host == "evil.example:"+port || c.header["Origin"] != "" || c.header["Sec-Fetch-Site"] != ""
		if wantCode := "MissingAuthenticationTokenException"; !refused && code != wantCode {
			t.Errorf("%s: %s, want %s", c.name, code, wantCode)
		}
		if refused && code == "MissingAuthenticationTokenException" {
			t.Errorf("%s: reached the signature check", c.name)
		}
	}

	// The real SDK client still gets through (it sends
	// application/octet-stream, no Origin).
	client := lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(stack.InvokeURL()),
		Credentials:  credentials.NewStaticCredentialsProvider(localtest.OperatorKeyID, localtest.OperatorSecret, ""),
	})
	_, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("NoSuchFunction"), Payload: []byte(`{}`)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("SDK Invoke: %v, want ResourceNotFoundException", err)
	}
}
