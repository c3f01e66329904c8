// Package calltoken is how a tool function knows who called it.
//
// The mcpfn gateway (and, for Amazon Bedrock AgentCore Gateway, the mcpfn
// request interceptor) signs every call it forwards with a short-lived call
// token: a JWT (HS256) whose claims bind the verified caller, the call id, the
// tool, the target function (audience), a digest of the arguments, and an
// expiry no later than the call's deadline plus a small skew. The tool
// function's adapter verifies the token before anything else runs; an envelope
// whose token does not verify is refused, and a caller named anywhere else in
// the payload is never identity.
//
// Each tool function has a key of its own (a Secrets Manager secret that
// template.yaml generates; see docs/decisions/0017-call-tokens.md): the signers
// hold every function's key, a function holds only its own, so a compromised
// tool function can mint calls to nobody but itself. A [Keyring] holds a
// function's current key and the keys it still accepts during a rotation's
// grace window; [LoadKeyring] loads one from Secrets Manager (the AWSCURRENT
// and AWSPREVIOUS versions) at cold start, and a [Verifier] loads it again
// when it is [DefaultKeyMaxAge] old and, rate limited, when a token names a
// key it does not know. A [Signer] signs with each function's current key
// and verifies nothing: [LoadSigner] reads the AWSCURRENT versions only.
package calltoken
