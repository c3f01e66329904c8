package calltoken_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
)

// StartVerifierFromEnv begins the Secrets Manager fetch before its caller
// waits: the request is in flight while the caller goes on with its cold
// start, and the wait returns the verifier of the secret's keys.
func TestStartVerifierFromEnvOverlapsTheFetch(t *testing.T) {
	sm, err := secretsstandin.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	sm.Put("EchoCallKey", string(secretA))
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		sm.ServeHTTP(w, r)
	}))
	defer gate.Close()
	t.Setenv(calltoken.EnvKeySecret, secretsstandin.ARN("EchoCallKey"))
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "fn-delete")
	t.Setenv(calltoken.EnvGrace, "")
	configs := 0
	wait := calltoken.StartVerifierFromEnv(context.Background(), func() (aws.Config, error) {
		configs++
		return aws.Config{
			Region: secretsstandin.Region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
			BaseEndpoint: aws.String(gate.URL),
		}, nil
	})
	<-arrived // the fetch is under way before anyone waits for it
	close(release)
	v, err := wait()
	if err != nil || v == nil {
		t.Fatalf("wait = %v, %v", v, err)
	}
	if v2, err2 := wait(); v2 != v || err2 != nil || configs != 1 {
		t.Errorf("a second wait = %v, %v (first %v); AWS config loaded %d times, want 1", v2, err2, v, configs)
	}
	ring, err := calltoken.KeyringFromSecrets(secretA)
	if err != nil {
		t.Fatal(err)
	}
	s := calltoken.NewSigner(calltoken.SignerGateway)
	s.Add("broadcast_delete", "fn-delete", ring, nil)
	if _, err := v.Verify(context.Background(), sign(t, s, call()), want()); err != nil {
		t.Errorf("a token signed with the secret's key: %v", err)
	}
}

// Without MCPFN_CALL_KEY_SECRET nothing starts: no AWS configuration is
// loaded and the wait returns nil, nil at once, as VerifierFromEnv does.
// A configuration that cannot be loaded is the wait's error.
func TestStartVerifierFromEnvWithoutSecret(t *testing.T) {
	t.Setenv(calltoken.EnvKeySecret, "")
	wait := calltoken.StartVerifierFromEnv(context.Background(), func() (aws.Config, error) {
		t.Error("AWS config loaded without a key secret")
		return aws.Config{}, nil
	})
	if v, err := wait(); v != nil || err != nil {
		t.Errorf("wait = %v, %v; want nil, nil", v, err)
	}
	t.Setenv(calltoken.EnvKeySecret, "some-secret")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "fn")
	boom := errors.New("no config")
	wait = calltoken.StartVerifierFromEnv(context.Background(), func() (aws.Config, error) { return aws.Config{}, boom })
	if _, err := wait(); !errors.Is(err, boom) {
		t.Errorf("wait: %v, want %v", err, boom)
	}
}
