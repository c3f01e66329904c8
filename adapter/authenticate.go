package adapter

import (
	"context"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
)

// WithCallVerifier sets the verifier of this function's call tokens. [Start]
// builds it from the environment (MCPFN_CALL_KEY_SECRET, which template.yaml
// sets). Without one, the function refuses every envelope: it cannot tell the
// gateway from anyone else allowed to invoke it.
func WithCallVerifier(v *calltoken.Verifier) Option {
	return func(o *options) { o.verifier = v }
}

// authenticate is the end of step 1: the call's identity, from its call
// token and from nothing else.
//
//   - An envelope must carry a token that verifies for this function, this
//     tool, this call id, these arguments and (a multi-round retry) these
//     input responses and this request state; otherwise the call is refused
//     with UNAUTHORIZED and a reason, before any hook runs.
//   - An AgentCore call may carry one (placed by the mcpfn request
//     interceptor); without it the call runs with no identity, so tools that
//     require scopes refuse it. A token that is present must verify.
//   - A JSON-RPC call (a client invoking the function directly) never has an
//     identity.
//
// It returns when the call's waiter gives up: for a synchronous call the
// gateway forwarded, its token's expiry, which the gateway sets to the
// deadline of its own wait (its invoke timeout, cut to its own Lambda
// deadline). Past it nobody reads the answer, so the call's context ends
// there (runCall), and a handler that honours it stops instead of running,
// billed, to the function's own timeout. A task run's token lives its run
// window, an AgentCore call's a minute whatever the AgentCore Gateway
// waits: neither says when a waiter gives up, so both return zero.
func (f *Function) authenticate(ctx context.Context, call *Call, d *decoded) (time.Time, error) {
	switch {
	case d.source == SourceEnvelope:
	case d.source == SourceAgentCore && d.callToken != "":
	default:
		return time.Time{}, nil
	}
	v := f.opts.verifier
	if v == nil {
		return time.Time{}, refused(call, d, &calltoken.Error{Reason: calltoken.ReasonNoKeys,
			Detail: "this function has no call-token keys (MCPFN_CALL_KEY_SECRET)"})
	}
	// Each format has one signer: a gateway token does not open the
	// AgentCore path, nor an interceptor token an envelope.
	// A multi-round retry's answers and state are bound like the arguments
	// (an AgentCore call carries neither: its target gets the arguments only).
	want := calltoken.Expect{Tool: d.toolName, Args: d.args, Signer: calltoken.SignerInterceptor,
		InputResponses: d.inputResponses, RequestState: d.requestState}
	if d.source == SourceEnvelope {
		want.CallID, want.Signer, want.Task = d.callID, calltoken.SignerGateway, d.task
	}
	if d.argsRef != nil {
		// Stored arguments (claimcheck.go): the token must have been issued
		// for the digest the reference names; fetchArguments then checks
		// that the stored bytes hash to it.
		digest, err := argsDigestOf(d.argsRef)
		if err != nil {
			return time.Time{}, refused(call, d, &calltoken.Error{Reason: calltoken.ReasonArguments, Detail: err.Error()})
		}
		want.Args, want.ArgsDigest = nil, digest
	}
	claims, err := v.Verify(ctx, d.callToken, want)
	if err != nil {
		return time.Time{}, refused(call, d, err)
	}
	if d.source == SourceAgentCore && claims.CallID != "" {
		// The interceptor's call id: a replayed token names the same call,
		// so a destructive tool's write-ahead row refuses it.
		call.ID = claims.CallID
	}
	call.caller = claims.Caller.Clone()
	if call.caller != nil && call.caller.Tenant != "" {
		call.tenant = call.caller.Tenant
	}
	if d.source != SourceEnvelope || d.task != "" || claims.ExpiresAt == nil {
		return time.Time{}, nil
	}
	// exp is whole seconds (a JWT NumericDate), the gateway's deadline
	// truncated: the wait ends within the second after it.
	return claims.ExpiresAt.Time.Add(time.Second), nil
}

// refused records the caller the payload claimed (as unverified) and builds
// the UNAUTHORIZED error, whose reason the caller and the audit row see.
func refused(call *Call, d *decoded, err error) error {
	call.claimed = d.claimed
	if call.claimed == nil {
		call.claimed = calltoken.Unverified(d.callToken)
	}
	reason := calltoken.ReasonOf(err)
	if reason == "" {
		reason = calltoken.ReasonMalformed
	}
	if reason == calltoken.ReasonKeysUnusable {
		// Not the caller's fault: the function cannot read its keys
		// (Secrets Manager unreachable for longer than the keys may age).
		return NewError(CodeUnavailable, "this function cannot check who called it right now; retry later").
			WithDetails(map[string]any{"reason": string(reason)}).
			WithCause(err)
	}
	return NewError(CodeUnauthorized, "the call's token was refused ("+string(reason)+")").
		WithDetails(map[string]any{"reason": string(reason)}).
		WithHint("call this tool through its gateway; a function verifies who called it and is never told").
		WithCause(err)
}
