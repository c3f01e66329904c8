package lambdatest

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
)

// Secret is the fixed test secret of function fn: each function its own,
// as each deployed function has its own Secrets Manager secret.
func Secret(fn string) []byte {
	sum := sha256.Sum256([]byte("mcpfn test call key for " + fn))
	return []byte(hex.EncodeToString(sum[:]))
}

// Keyring is fn's test keyring.
func Keyring(fn string) *calltoken.Keyring {
	r, err := calltoken.KeyringFromSecrets(Secret(fn))
	if err != nil {
		panic(err)
	}
	return r
}

// Verifier is the verifier function fn builds from its test key.
func Verifier(fn string) *calltoken.Verifier {
	v, err := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: fn, Keyring: Keyring(fn)})
	if err != nil {
		panic(err)
	}
	return v
}

// Signer is a gateway's signer holding the test keys of functions
// (tool → function).
func Signer(functions map[string]string) *calltoken.Signer {
	s := calltoken.NewSigner(calltoken.SignerGateway)
	for tool, fn := range functions {
		s.Add(tool, fn, Keyring(calltoken.FunctionName(fn)), nil)
	}
	return s
}

// Token signs one call of tool to function fn as the gateway would, valid
// for a minute.
func Token(fn, tool, callID string, caller *calltoken.Identity, args []byte) string {
	tok, err := Signer(map[string]string{tool: fn}).Sign(calltoken.Call{
		Tool: tool, CallID: callID, Caller: caller, Args: args, Expires: time.Now().Add(time.Minute),
	})
	if err != nil {
		panic(err)
	}
	return tok
}

// RoundToken is Token for a multi-round retry: the token binds the round's
// input responses and request state, as the gateway signs them.
func RoundToken(fn, tool, callID string, caller *calltoken.Identity, args, inputResponses []byte, requestState string) string {
	tok, err := Signer(map[string]string{tool: fn}).Sign(calltoken.Call{
		Tool: tool, CallID: callID, Caller: caller, Args: args, Expires: time.Now().Add(time.Minute),
		InputResponses: inputResponses, RequestState: requestState,
	})
	if err != nil {
		panic(err)
	}
	return tok
}

// InterceptorToken signs one call of tool to function fn as the AgentCore
// request interceptor would, valid until expires.
func InterceptorToken(fn, tool, callID string, caller *calltoken.Identity, args []byte, expires time.Time) string {
	s := calltoken.NewSigner(calltoken.SignerInterceptor)
	s.Add(tool, fn, Keyring(calltoken.FunctionName(fn)), nil)
	tok, err := s.Sign(calltoken.Call{Tool: tool, CallID: callID, Caller: caller, Args: args, Expires: expires})
	if err != nil {
		panic(err)
	}
	return tok
}
