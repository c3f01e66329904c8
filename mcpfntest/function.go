package mcpfntest

import (
	"crypto/rand"
	"log/slog"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
)

// Function is a tool served as its Lambda function serves it: by
// adapter.New, with a call key of its own that verifies the calls [Function.Call]
// signs, and an audit kept in memory. Calls to one Function share that
// audit, so a test can replay a call id (a destructive tool then refuses to
// run it again). It is safe for concurrent calls.
type Function struct {
	tool   *adapter.Tool
	fn     *adapter.Function
	signer *calltoken.Signer
	audit  auditLog
}

// New serves tool for a test. opts are the adapter's own (hooks, limits,
// credentials, …), given after the kit's call verifier, audit and logger
// (the test's log); to record
// rows with a real adapter.Recorder as well, give [AuditTo], not
// adapter.WithAuditor, which would take the rows away from the kit.
func New(t testing.TB, tool *adapter.Tool, opts ...adapter.Option) *Function {
	t.Helper()
	if tool == nil {
		t.Fatal("mcpfntest: New with a nil tool")
	}
	// The function's name is the audience of its call tokens, as a
	// deployed function's is; its key is random, as each deployed
	// function's own secret is.
	name := "mcpfntest-" + tool.Name()
	secret := make([]byte, calltoken.MinSecretBytes)
	_, _ = rand.Read(secret)
	ring, err := calltoken.KeyringFromSecrets(secret)
	if err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	v, err := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: name, Keyring: ring})
	if err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	signer := calltoken.NewSigner(calltoken.SignerGateway)
	signer.Add(tool.Name(), name, ring, nil)
	// The audit first, as adapter.Start gives it: its AfterToolCall runs
	// last, so its rows carry every other hook set's dimensions. What the
	// function logs (a refused replay, a hook's swallowed failure) goes to
	// the test's log.
	all := append([]adapter.Option{
		adapter.WithCallVerifier(v),
		adapter.WithAuditor(recorder{}),
		adapter.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))),
	}, opts...)
	return &Function{tool: tool, fn: adapter.New(tool, all...), signer: signer}
}

// Call calls tool once: New(t, tool).Call(t, args, opts...).
func Call(t testing.TB, tool *adapter.Tool, args any, opts ...Option) *Result {
	t.Helper()
	return New(t, tool).Call(t, args, opts...)
}

// Rows returns every audit row the function's calls have handed to the
// audit so far, in the order they were handed over (see [Result.Rows]). A
// handler that outlived its call and ended since has its late outcome
// (LateOutcome, LateErrorCode, FinishedAt) on its final row here, as the
// audit table adds it; the call's Result was returned before.
func (f *Function) Rows() []audit.Row { return f.audit.all() }
