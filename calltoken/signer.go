package calltoken

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Signer signs the calls one front (the gateway, or the AgentCore
// interceptor) forwards, each with the key of its target function. It is safe
// for concurrent use.
type Signer struct {
	name    string
	targets map[string]*target // by tool name
}

type target struct {
	function string // audience: the function's name
	ring     atomic.Pointer[Keyring]
	reload   func(context.Context) (*Keyring, error)
}

// NewSigner returns a signer that signs as name ([SignerGateway] or
// [SignerInterceptor]).
func NewSigner(name string) *Signer { return &Signer{name: name, targets: map[string]*target{}} }

// Add registers tool's target function (a name or an ARN) and its keys;
// reload, when set, is used by [Signer.Reload].
func (s *Signer) Add(tool, function string, ring *Keyring, reload func(context.Context) (*Keyring, error)) {
	t := &target{function: FunctionName(function), reload: reload}
	t.ring.Store(ring)
	s.targets[tool] = t
}

// Tools returns the tools the signer holds keys for.
func (s *Signer) Tools() []string {
	out := make([]string, 0, len(s.targets))
	for name := range s.targets {
		out = append(out, name)
	}
	return out
}

// Call is what a signer is asked to vouch for.
type Call struct {
	Tool    string
	CallID  string
	Caller  *Identity // nil: no verified caller
	Args    []byte
	Expires time.Time
	// Task is the task id of a task run ("" for a synchronous call).
	Task string
	// InputResponses and RequestState are what the forwarded call carries
	// of a multi-round retry, exactly as the function will receive them.
	InputResponses []byte
	RequestState   string
	// ArgsDigest, when set, is [ArgsDigest] of the arguments, computed
	// already (the gateway hashed them storing them): Args is then not
	// digested again.
	ArgsDigest string
}

// Sign returns the call token for c.
func (s *Signer) Sign(c Call) (string, error) {
	t := s.targets[c.Tool]
	if t == nil {
		return "", fmt.Errorf("calltoken: no key for tool %q", c.Tool)
	}
	now := time.Now()
	if most := maxLifetime(c.Task); c.Expires.Sub(now) > most {
		// A verifier would refuse it (token_lifetime_too_long): say so here,
		// where the configuration that asked for it can be named.
		kind := "a synchronous call's"
		if c.Task != "" {
			kind = "a task run's"
		}
		return "", fmt.Errorf("calltoken: %s token may be valid for at most %s, not %s (the signer's invoke timeout or task run window is too long)",
			kind, most, c.Expires.Sub(now).Round(time.Second))
	}
	digest := c.ArgsDigest
	if digest == "" {
		digest = ArgsDigest(c.Args)
	}
	return Sign(t.ring.Load().Current(), &Claims{
		Caller: c.Caller, CallID: c.CallID, Tool: c.Tool, Args: digest, Task: c.Task,
		Round: RoundDigest(c.InputResponses, c.RequestState), Version: TokenVersion,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.name,
			Audience:  jwt.ClaimStrings{t.function},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(c.Expires),
		},
	})
}

// Reload fetches every target's keys again (a rotation's new current key
// then signs). A target whose reload fails keeps its keys.
func (s *Signer) Reload(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for tool, t := range s.targets {
		if t.reload == nil {
			continue
		}
		wg.Go(func() {
			ring, err := t.reload(ctx)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", tool, err))
				mu.Unlock()
				return
			}
			t.ring.Store(ring)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// FunctionName returns the function name in a name, partial ARN or full ARN
// (with or without a version or alias): the name a function knows itself by
// (AWS_LAMBDA_FUNCTION_NAME), and so a token's audience.
func FunctionName(ref string) string {
	parts := strings.Split(ref, ":")
	for i, p := range parts {
		if p == "function" && i+1 < len(parts) {
			return parts[i+1]
		}
	}
	// "123456789012:function:name" has "function"; a plain "name" or
	// "name:alias" has not.
	return parts[0]
}
