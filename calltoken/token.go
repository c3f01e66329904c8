package calltoken

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
	segjson "github.com/segmentio/encoding/json"
)

// TokenType is the "typ" header of a call token, so that no other JWT signed
// with the same algorithm can be taken for one.
const TokenType = "mcpfn-call+jwt"

// TokenVersion is the version of the claims signers write ("ver"; absent
// means 1). The rules:
//   - a claim a function must check to stay safe raises the version;
//   - a verifier accepts the versions it knows. An older one only where
//     every claim it lacks has the value its absence stands for, so that
//     signers and functions updated at different moments of a deploy lose no
//     call and gain nothing: version 1 has no "rnd", and is accepted only for
//     a call that carries no input responses and no request state;
//   - a newer version is refused (token_unsupported_version): it may bind
//     something this function would not check.
//
// Version 2 added "rnd" ([RoundDigest]).
const TokenVersion = 2

// MaxTokenBytes bounds a call token; a longer one is refused before it is
// decoded.
const MaxTokenBytes = 8 << 10

// DefaultSkew is the clock difference tolerated between signer and function.
const DefaultSkew = 5 * time.Second

// The longest a token may be valid (exp − iat), by what it is for. They are
// the longest lifetimes the signers issue, so that a captured token is worth
// no more than the longest legitimate one; a longer token is refused
// (token_lifetime_too_long), and a signer refuses to mint one.
const (
	// MaxCallLifetime bounds a synchronous call's token. No signer waits for
	// an answer longer than Lambda's longest invocation (15 minutes): the
	// gateway's tokens expire at its forward's deadline (its invoke timeout,
	// 30 s by default, cut short by its own invocation's end), the AgentCore
	// interceptor's after a minute.
	MaxCallLifetime = 15 * time.Minute
	// MaxTaskLifetime bounds a task run's token (the gateway's run window,
	// 40 minutes by default): Lambda starts no asynchronous event older
	// than the function's MaximumEventAgeInSeconds, which the template sets
	// to an hour.
	MaxTaskLifetime = time.Hour
)

// maxLifetime is the bound of a token for task ("" for a synchronous call).
func maxLifetime(task string) time.Duration {
	if task != "" {
		return MaxTaskLifetime
	}
	return MaxCallLifetime
}

// Signer names, the "iss" of the tokens they sign.
const (
	SignerGateway     = "mcpfn-gateway"
	SignerInterceptor = "mcpfn-agentcore-interceptor"
)

// Claims are what a call token binds.
type Claims struct {
	// Caller is the verified caller; nil when the signer verified none
	// (a gateway in auth mode none).
	Caller *Identity `json:"caller,omitempty"`
	// CallID is the call's id (the audit row's key).
	CallID string `json:"cid"`
	// Tool is the tool the call is for; it must equal params.name.
	Tool string `json:"tool"`
	// Args is [ArgsDigest] of the call's arguments.
	Args string `json:"args"`
	// Task is the id of the task run the token was minted for (the MCP
	// Tasks extension), "" for a synchronous call. A function compares it
	// with the envelope's task exactly: a synchronous call's token never
	// starts or finishes a task, nor a task's token answers synchronously.
	Task string `json:"task,omitempty"`
	// Round is [RoundDigest] of a multi-round retry's input responses and
	// request state; "" for a call that carries neither. Without it, someone
	// holding a captured envelope could swap the client's answer to an
	// elicitation (or the state) and keep the token.
	Round string `json:"rnd,omitempty"`
	// Version is the claims' format, [TokenVersion] when a [Signer] signs;
	// 0 (absent) is version 1.
	Version int `json:"ver,omitempty"`
	// Issuer ("iss") is the signer, Audience ("aud") the target function's
	// name, IssuedAt and ExpiresAt the token's lifetime.
	jwt.RegisteredClaims
}

// Sign returns the compact JWT of c signed with key. The caller sets
// Issuer, Audience, IssuedAt and ExpiresAt.
func Sign(key Key, c *Claims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["kid"] = key.ID
	t.Header["typ"] = TokenType
	return t.SignedString(key.token)
}

// ArgsDigest is the digest a token binds the arguments with: SHA-256 over
// their canonical form (objects with sorted keys, no insignificant space,
// numbers as written), base64url. Absent, empty and null arguments are "{}",
// as a tool receives them. Bytes that are not JSON are digested as they are
// (and so match nothing a signer produced from JSON).
func ArgsDigest(args []byte) string {
	var d [digestLen]byte
	return string(argsDigest(&d, args))
}

// Canonical returns the canonical form of args that [ArgsDigest] digests:
// "{}" for absent, empty and null arguments; args itself (trimmed) when it
// is already canonical or not JSON; else a re-encoding with sorted keys.
// Its SHA-256 is the digest's, so a copy of the arguments stored in this
// form (issue 22's claim check) is checked by hashing the stored bytes.
func Canonical(args []byte) []byte { return canonical(args) }

// DigestOfSHA256 is the [ArgsDigest] whose SHA-256 is sum: how a digest is
// compared with the hash of arguments stored in [Canonical] form.
func DigestOfSHA256(sum [sha256.Size]byte) string {
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// RoundDigest is the digest a token binds a multi-round retry with: "" for
// a call with neither input responses (absent, empty or null) nor a request
// state, else SHA-256 over the canonical input responses (as [ArgsDigest]
// makes them) and the request state, each length-prefixed, base64url. An
// empty object of responses is not the same as none: a tool can tell them
// apart.
func RoundDigest(inputResponses []byte, requestState string) string {
	responses := bytes.TrimSpace(inputResponses)
	if string(responses) == "null" {
		responses = nil
	}
	if len(responses) == 0 && requestState == "" {
		return ""
	}
	if len(responses) > 0 {
		responses = canonical(responses)
	}
	h := sha256.New()
	for _, field := range [][]byte{[]byte("mcpfn round"), responses, []byte(requestState)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(field)))
		h.Write(n[:])
		h.Write(field)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// digestLen is the length of an [ArgsDigest]: 32 bytes in base64url.
const digestLen = 43

// argsDigest writes the digest into d, so that a verifier can compare it
// with a token's claim without allocating.
func argsDigest(d *[digestLen]byte, args []byte) []byte {
	sum := sha256.Sum256(canonical(args))
	base64.RawURLEncoding.Encode(d[:], sum[:])
	return d[:]
}

func canonical(args []byte) []byte {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return []byte("{}")
	}
	if isCanonical(trimmed) {
		// Already what the re-encoding below would produce (isCanonical
		// accepts nothing else): no parse, no allocation.
		return trimmed
	}
	return reencode(trimmed)
}

// reencode is the canonical form by definition: parse, then encode with
// sorted keys and numbers as written.
func reencode(trimmed []byte) []byte {
	var v any
	rest, err := segjson.Parse(trimmed, &v, segjson.UseNumber)
	if err != nil || len(bytes.TrimSpace(rest)) != 0 {
		return trimmed
	}
	out, err := segjson.Append(make([]byte, 0, len(trimmed)), v, segjson.EscapeHTML|segjson.SortMapKeys)
	if err != nil {
		return trimmed
	}
	return out
}

// Reason says why a token was refused. The adapter puts it in the
// UNAUTHORIZED error's details and the audit row.
type Reason string

// The reasons a token is refused.
const (
	ReasonMissing      Reason = "token_missing"
	ReasonOversized    Reason = "token_oversized"
	ReasonMalformed    Reason = "token_malformed"
	ReasonAlgorithm    Reason = "token_algorithm"
	ReasonUnknownKey   Reason = "token_unknown_key"
	ReasonSignature    Reason = "token_bad_signature"
	ReasonExpired      Reason = "token_expired"
	ReasonNotYetValid  Reason = "token_not_yet_valid"
	ReasonAudience     Reason = "token_wrong_audience"
	ReasonSigner       Reason = "token_wrong_signer"
	ReasonTool         Reason = "token_wrong_tool"
	ReasonCallID       Reason = "token_wrong_call_id"
	ReasonArguments    Reason = "token_wrong_arguments"
	ReasonTask         Reason = "token_wrong_task"
	ReasonLifetime     Reason = "token_lifetime_too_long"
	ReasonRound        Reason = "token_wrong_round"
	ReasonVersion      Reason = "token_unsupported_version"
	ReasonNoKeys       Reason = "function_has_no_keys"
	ReasonKeysUnusable Reason = "function_keys_unavailable"
)

// Error is a refused token.
type Error struct {
	Reason Reason
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "call token refused: " + string(e.Reason)
	}
	return "call token refused: " + string(e.Reason) + ": " + e.Detail
}

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the reason of a refusal, "" for another error.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// Expect is what the token must say for the call at hand.
type Expect struct {
	Tool   string // params.name
	CallID string // the envelope's call id; "" when the format carries none
	Args   []byte // the arguments as received
	// Task is the envelope's task id; "" for a synchronous call. Unlike
	// CallID it is always compared: "" expects a token without a task.
	Task string
	// Signer is the signer the call's format comes from ("iss"): the
	// gateway signs envelopes, the AgentCore interceptor signs _mcpfn. ""
	// accepts any signer the verifier accepts.
	Signer string
	// InputResponses and RequestState are a multi-round retry's, as
	// received (none on a first round, and never in an AgentCore call).
	InputResponses []byte
	RequestState   string
	// ArgsDigest, when set, is the digest of arguments the call carries by
	// reference (stored in Canonical form, the envelope naming their
	// SHA-256): it is compared instead of a digest of Args, and whoever
	// reads the stored bytes checks that they hash to it.
	ArgsDigest string
}

// Unverified returns the caller a token claims, without checking anything.
// It is for the audit row's clearly marked unverified field only.
func Unverified(token string) *Identity {
	if len(token) > MaxTokenBytes {
		return nil
	}
	var c Claims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		return nil
	}
	return c.Caller
}

// verifyClaims checks everything that needs no key, so that an unknown key
// id is looked up only for a token that would otherwise be accepted.
func verifyClaims(c *Claims, audience string, signers []string, want Expect, now time.Time, skew time.Duration) error {
	if c.Version != 0 && (c.Version < 1 || c.Version > TokenVersion) {
		return refuse(ReasonVersion, "version %d; this function knows versions 1 to %d", c.Version, TokenVersion)
	}
	if c.ExpiresAt == nil || c.IssuedAt == nil {
		return refuse(ReasonMalformed, "exp and iat are required")
	}
	if life, most := c.ExpiresAt.Sub(c.IssuedAt.Time), maxLifetime(c.Task); life > most {
		return refuse(ReasonLifetime, "valid for %s; no signer issues tokens valid for more than %s", life, most)
	}
	if !now.Before(c.ExpiresAt.Add(skew)) {
		return refuse(ReasonExpired, "expired at %s", c.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if c.IssuedAt.After(now.Add(skew)) || (c.NotBefore != nil && c.NotBefore.After(now.Add(skew))) {
		return refuse(ReasonNotYetValid, "issued in the future")
	}
	if len(c.Audience) != 1 || c.Audience[0] != audience {
		return refuse(ReasonAudience, "the token is for another function")
	}
	if !slices.Contains(signers, c.Issuer) {
		return refuse(ReasonSigner, "the token's signer is not one this function accepts")
	}
	if want.Signer != "" && c.Issuer != want.Signer {
		return refuse(ReasonSigner, "the token's signer does not sign calls in this format")
	}
	if c.Tool != want.Tool {
		return refuse(ReasonTool, "the token is for tool %q", c.Tool)
	}
	if want.CallID != "" && c.CallID != want.CallID {
		return refuse(ReasonCallID, "the token is for another call")
	}
	if c.Task != want.Task {
		return refuse(ReasonTask, "the token is not for this task run (or is for one, and this call is synchronous)")
	}
	var d [digestLen]byte
	if want.ArgsDigest != "" {
		if c.Args != want.ArgsDigest {
			return refuse(ReasonArguments, "the stored arguments are not the ones the token was issued for")
		}
	} else if c.Args != string(argsDigest(&d, want.Args)) {
		return refuse(ReasonArguments, "the arguments are not the ones the token was issued for")
	}
	// A version-1 token has no "rnd": it passes only for a call without a
	// round, as a version-2 token for such a call does.
	if c.Round != RoundDigest(want.InputResponses, want.RequestState) {
		return refuse(ReasonRound, "the input responses or request state are not the ones the token was issued for")
	}
	return nil
}
