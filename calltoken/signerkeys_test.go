package calltoken_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
)

// stageLog is a Secrets Manager stand-in guard that records the version
// stage of every GetSecretValue and refuses AWSPREVIOUS, as a role allowed
// only the current version would be.
type stageLog struct {
	mu     sync.Mutex
	stages []string
}

func (l *stageLog) guard(_ *http.Request, body []byte, action, _ string) *secretsstandin.Refusal {
	var in struct{ VersionStage string }
	_ = json.Unmarshal(body, &in)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stages = append(l.stages, in.VersionStage)
	if action == "secretsmanager:GetSecretValue" && in.VersionStage == "AWSPREVIOUS" {
		return &secretsstandin.Refusal{Code: "AccessDeniedException", Message: "the previous version is not for signers"}
	}
	return nil
}

func (l *stageLog) reads(stage string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.stages {
		if s == stage {
			n++
		}
	}
	return n
}

// A signer (the gateway, the interceptor) signs with each function's
// current key and verifies nothing: it reads only AWSCURRENT, at load and
// at every reload, and a secret whose previous version it may not read (or
// that has one) changes nothing. Functions still read both versions
// (LoadKeyring), so a call signed before a rotation verifies.
func TestSignerReadsOnlyTheCurrentVersion(t *testing.T) {
	sm, err := secretsstandin.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	var log stageLog
	sm.SetGuard(log.guard)
	api := secretsmanager.NewFromConfig(aws.Config{
		Region: secretsstandin.Region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(sm.URL),
	})
	arn := secretsstandin.ARN("DeleteCallKey")
	sm.Put("DeleteCallKey", string(secretC))
	sm.Put("DeleteCallKey", string(secretA)) // rotated: AWSPREVIOUS exists
	functions := map[string]string{"broadcast_delete": "fn-delete"}
	s, err := calltoken.LoadSigner(context.Background(), api, calltoken.SignerGateway, functions, map[string]string{"broadcast_delete": arn})
	if err != nil {
		t.Fatalf("a signer that may not read the previous version: %v", err)
	}
	if _, err := verifier(t, "fn-delete", ring(t, secretA), nil).Verify(context.Background(), sign(t, s, call()), want()); err != nil {
		t.Fatalf("the signer does not sign with the current key: %v", err)
	}
	sm.Put("DeleteCallKey", string(secretB)) // a rotation
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := verifier(t, "fn-delete", ring(t, secretB), nil).Verify(context.Background(), sign(t, s, call()), want()); err != nil {
		t.Fatalf("after a reload the signer does not sign with the new key: %v", err)
	}
	if n := log.reads("AWSPREVIOUS"); n != 0 {
		t.Fatalf("the signer read AWSPREVIOUS %d times", n)
	}
	if n := log.reads("AWSCURRENT"); n != 2 {
		t.Fatalf("the signer read AWSCURRENT %d times, want 2 (load, reload)", n)
	}
	// A function's keyring still asks for the previous version (refused
	// here, so it fails: the function's role may read it on AWS).
	if _, err := calltoken.LoadKeyring(context.Background(), api, arn, calltoken.DefaultGrace); err == nil || log.reads("AWSPREVIOUS") != 1 {
		t.Fatalf("LoadKeyring: %v, %d AWSPREVIOUS reads", err, log.reads("AWSPREVIOUS"))
	}
}
