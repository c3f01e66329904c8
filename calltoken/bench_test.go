package calltoken_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
)

// BenchmarkSign is the gateway's cost per forwarded call.
func BenchmarkSign(b *testing.B) {
	s := calltoken.NewSigner(calltoken.SignerGateway)
	r, _ := calltoken.KeyringFromSecrets(secretA)
	s.Add("broadcast_delete", "fn-delete", r, nil)
	c := calltoken.Call{Tool: "broadcast_delete", CallID: "c-1", Caller: alice, Args: args, Expires: time.Now().Add(10 * time.Minute)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify is the function's cost per call.
func BenchmarkVerify(b *testing.B) {
	s := calltoken.NewSigner(calltoken.SignerGateway)
	r, _ := calltoken.KeyringFromSecrets(secretA)
	s.Add("broadcast_delete", "fn-delete", r, nil)
	tok, err := s.Sign(calltoken.Call{Tool: "broadcast_delete", CallID: "c-1", Caller: alice, Args: args, Expires: time.Now().Add(10 * time.Minute)})
	if err != nil {
		b.Fatal(err)
	}
	v, _ := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: "fn-delete", Keyring: r})
	want := calltoken.Expect{Tool: "broadcast_delete", CallID: "c-1", Args: args}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(context.Background(), tok, want); err != nil {
			b.Fatal(err)
		}
	}
}
