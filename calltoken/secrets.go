package calltoken

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// Environment variables naming the secrets keys are derived from. They hold
// secret ids (ARNs or names), never key material.
const (
	// EnvKeySecret is a tool function's own key secret.
	EnvKeySecret = "MCPFN_CALL_KEY_SECRET"
	// EnvKeySecrets are a signer's secrets, "tool=secretId,tool2=…".
	EnvKeySecrets = "MCPFN_CALL_KEY_SECRETS"
	// EnvGrace is how long after a rotation the previous key still
	// verifies (a Go duration; default DefaultGrace).
	EnvGrace = "MCPFN_CALL_KEY_GRACE"
)

// DefaultGrace is how long the previous key verifies after a rotation: longer
// than any call's lifetime, so no call in flight during a rotation is lost.
const DefaultGrace = time.Hour

// SecretsAPI is the part of the Secrets Manager API a keyring is loaded with.
// *secretsmanager.Client implements it.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// LoadKeyring reads a secret's AWSCURRENT version (the key that signs) and
// its AWSPREVIOUS version, which verifies until grace after the current
// version was created. Both are fetched concurrently: a cold start waits for
// one round trip.
func LoadKeyring(ctx context.Context, api SecretsAPI, secretID string, grace time.Duration) (*Keyring, error) {
	type got struct {
		out *secretsmanager.GetSecretValueOutput
		err error
	}
	fetch := func(stage string) <-chan got {
		ch := make(chan got, 1)
		go func() {
			out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID), VersionStage: aws.String(stage)})
			ch <- got{out, err}
		}()
		return ch
	}
	curC, prevC := fetch("AWSCURRENT"), fetch("AWSPREVIOUS")
	cur, prev := <-curC, <-prevC
	if cur.err != nil {
		return nil, fmt.Errorf("calltoken: reading key secret %s: %w", secretID, cur.err)
	}
	current, err := NewKey(secretBytes(cur.out))
	if err != nil {
		return nil, fmt.Errorf("calltoken: key secret %s: %w", secretID, err)
	}
	var notFound *types.ResourceNotFoundException
	switch {
	case prev.err != nil && errors.As(prev.err, &notFound):
		return NewKeyring(current), nil // never rotated
	case prev.err != nil:
		return nil, fmt.Errorf("calltoken: reading the previous version of key secret %s: %w", secretID, prev.err)
	}
	previous, err := NewKey(secretBytes(prev.out))
	if err != nil {
		// A previous version too short to be a key never verified anything.
		return NewKeyring(current), nil
	}
	created := time.Now()
	if cur.out.CreatedDate != nil {
		created = *cur.out.CreatedDate
	}
	return NewKeyring(current, previous.Retired(created.Add(grace))), nil
}

// LoadSigningKeyring reads a secret's AWSCURRENT version only: the keyring
// of a signer ([LoadSigner]), which signs with the current key and verifies
// nothing, so that the previous version — one more Secrets Manager read per
// function at every cold start and reload — is never of use to it. A
// function's keyring, which verifies, is [LoadKeyring]'s.
func LoadSigningKeyring(ctx context.Context, api SecretsAPI, secretID string) (*Keyring, error) {
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		return nil, fmt.Errorf("calltoken: reading key secret %s: %w", secretID, err)
	}
	current, err := NewKey(secretBytes(out))
	if err != nil {
		return nil, fmt.Errorf("calltoken: key secret %s: %w", secretID, err)
	}
	return NewKeyring(current), nil
}

func secretBytes(out *secretsmanager.GetSecretValueOutput) []byte {
	if out.SecretString != nil {
		return []byte(*out.SecretString)
	}
	return out.SecretBinary
}
