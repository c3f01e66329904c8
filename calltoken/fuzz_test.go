package calltoken_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
)

// FuzzVerify: whatever a caller sends as a token, Verify never panics, and
// it accepts a token only if it is byte for byte one the signer issued for
// this call (the one valid token of the seed); every refusal has a reason.
func FuzzVerify(f *testing.F) {
	r, _ := calltoken.KeyringFromSecrets(secretA)
	s := calltoken.NewSigner(calltoken.SignerGateway)
	s.Add("broadcast_delete", "fn-delete", r, nil)
	good, err := s.Sign(calltoken.Call{Tool: "broadcast_delete", CallID: "c-1", Caller: alice, Args: args, Expires: time.Now().Add(10 * time.Minute)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIiwidHlwIjoibWNwZm4tY2FsbCtqd3QifQ.e30.")
	f.Add(good[:len(good)-2])
	f.Add(good + "A")
	v, _ := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: "fn-delete", Keyring: r})
	want := calltoken.Expect{Tool: "broadcast_delete", CallID: "c-1", Args: args}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(context.Background(), token, want)
		switch {
		case err == nil && token != good:
			// base64url without padding has one encoding per byte string,
			// but the JWT library tolerates trailing bits in the signature.
			if c.Caller == nil || c.Caller.Subject != "alice" || c.CallID != "c-1" {
				t.Fatalf("accepted a token with other claims: %q", token)
			}
		case err != nil && calltoken.ReasonOf(err) == "":
			t.Fatalf("refusal without a reason: %v", err)
		}
	})
}
