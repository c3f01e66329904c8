package calltoken

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// graceFromEnv reads EnvGrace.
func graceFromEnv() (time.Duration, error) {
	v := os.Getenv(EnvGrace)
	if v == "" {
		return DefaultGrace, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("calltoken: %s=%q is not a duration", EnvGrace, v)
	}
	return d, nil
}

// VerifierFromEnv builds the verifier of the function this process runs:
// its name from AWS_LAMBDA_FUNCTION_NAME, its keys from the secret
// EnvKeySecret names. It returns nil, nil when EnvKeySecret is unset: such a
// function refuses every envelope (it cannot tell the gateway from anyone).
func VerifierFromEnv(ctx context.Context, cfg aws.Config) (*Verifier, error) {
	secretID := os.Getenv(EnvKeySecret)
	if secretID == "" {
		return nil, nil
	}
	name := os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	if name == "" {
		return nil, fmt.Errorf("calltoken: AWS_LAMBDA_FUNCTION_NAME is not set")
	}
	grace, err := graceFromEnv()
	if err != nil {
		return nil, err
	}
	api := secretsmanager.NewFromConfig(cfg)
	load := func(ctx context.Context) (*Keyring, error) { return LoadKeyring(ctx, api, secretID, grace) }
	ring, err := load(ctx)
	if err != nil {
		return nil, err
	}
	return NewVerifier(VerifierConfig{Audience: name, Keyring: ring, Reload: load})
}

// StartVerifierFromEnv is [VerifierFromEnv] begun in the background, so
// that the Secrets Manager round trip of a cold start overlaps the rest of
// it; the returned function waits for the result (and returns it again on
// every later call). awsConfig is called once, in the background, and only
// when EnvKeySecret is set; without it nothing starts and the wait returns
// nil, nil. Wait before handing the process to the Lambda runtime: init
// may end, and the environment freeze, as soon as the runtime asks for its
// first event, and nothing should be in flight then.
func StartVerifierFromEnv(ctx context.Context, awsConfig func() (aws.Config, error)) (wait func() (*Verifier, error)) {
	if os.Getenv(EnvKeySecret) == "" {
		return func() (*Verifier, error) { return nil, nil }
	}
	load := sync.OnceValues(func() (*Verifier, error) {
		cfg, err := awsConfig()
		if err != nil {
			return nil, err
		}
		return VerifierFromEnv(ctx, cfg)
	})
	go load()
	return load
}

// ParseSecrets reads "tool=secretId,tool2=secretId2" (EnvKeySecrets).
func ParseSecrets(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		tool, id, ok := strings.Cut(part, "=")
		if !ok || tool == "" || id == "" {
			return nil, fmt.Errorf("calltoken: %s: %q is not tool=secretId", EnvKeySecrets, part)
		}
		out[strings.TrimSpace(tool)] = strings.TrimSpace(id)
	}
	return out, nil
}

// SignerFromEnv builds a signer named name for the tools of functions (tool
// → function), with the secrets EnvKeySecrets names.
func SignerFromEnv(ctx context.Context, cfg aws.Config, name string, functions map[string]string) (*Signer, error) {
	secrets, err := ParseSecrets(os.Getenv(EnvKeySecrets))
	if err != nil {
		return nil, err
	}
	return LoadSigner(ctx, secretsmanager.NewFromConfig(cfg), name, functions, secrets)
}

// LoadSigner builds a signer named name for the tools of functions (tool →
// function), each with the current key of the secret secrets names for it
// ([LoadSigningKeyring]: a signer verifies nothing, so it reads no previous
// version, then or at a reload), loaded concurrently. Every tool needs a
// secret: a tool the signer cannot sign for could not be called at all.
func LoadSigner(ctx context.Context, api SecretsAPI, name string, functions, secrets map[string]string) (*Signer, error) {
	s := NewSigner(name)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for tool, function := range functions {
		id := secrets[tool]
		if id == "" {
			errs = append(errs, fmt.Sprintf("no key secret for tool %q in %s", tool, EnvKeySecrets))
			continue
		}
		wg.Go(func() {
			load := func(ctx context.Context) (*Keyring, error) { return LoadSigningKeyring(ctx, api, id) }
			ring, err := load(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			s.Add(tool, function, ring, load)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("calltoken: %s", strings.Join(errs, "; "))
	}
	return s, nil
}

// Grace is the grace window the environment configures (EnvGrace).
func Grace() (time.Duration, error) { return graceFromEnv() }
