package adapter

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	stdjson "encoding/json"

	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/calltoken"
)

// Multi-round tool calls (MCP 2026-07-28, SEP-2322): a tool that needs
// something from the client — an answer from the user (elicitation/create),
// a completion from the client's model (sampling/createMessage), the client's
// roots (roots/list) — returns [RequireInput] instead of an output. The client
// fulfils the requests and calls the tool again with the answers
// ([Call.InputResponses]) and the state the tool asked to carry
// ([Call.RequestState]). Every round is its own invocation, so a tool stays
// stateless: what it must remember travels in the request state, which the
// adapter seals (HMAC-SHA256, bound to the tool and the verified caller, with
// an expiry) because it passes through the client.

// InputRequest is one request the client must fulfil before the call can go
// on. Method is "elicitation/create", "sampling/createMessage" or
// "roots/list"; Params are that method's params as MCP defines them.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// InputRequired is what a handler returns, as its error, to ask the client
// for input. It is not a failure: the call answers with an input_required
// result, OnToolError does not fire, and the audit row records the round's
// outcome as "input_required".
type InputRequired struct {
	Requests map[string]InputRequest
	// State is what the next round needs to know; the adapter seals it.
	State string
}

// RequireInput asks the client for input; state is carried to the next round.
func RequireInput(requests map[string]InputRequest, state string) *InputRequired {
	return &InputRequired{Requests: requests, State: state}
}

func (r *InputRequired) Error() string {
	keys := make([]string, 0, len(r.Requests))
	for k := range r.Requests {
		keys = append(keys, k)
	}
	return "input required: " + strings.Join(keys, ", ")
}

// InputResponses returns the client's answers to the previous round's input
// requests, by request id; nil on a first round. Like the arguments, they are
// caller data: validate them before use.
func (c *Call) InputResponses() map[string]json.RawMessage { return c.inputResponses }

// RequestState returns the state the tool returned with the previous round,
// after the adapter verified its seal; "" on a first round.
func (c *Call) RequestState() string { return c.requestState }

// ClientCapabilities returns the capabilities a modern (2026-07-28) client
// declared in this request's _meta, or nil. A tool asks only for input the
// client can give.
func (c *Call) ClientCapabilities() map[string]any {
	if c.MCP == nil || c.MCP.Meta == nil {
		return nil
	}
	caps, _ := c.MCP.Meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
	return caps
}

// DefaultRequestStateTTL bounds how long a sealed request state is accepted:
// long enough for a person to answer an elicitation, short enough that a
// leaked state is soon worthless.
const DefaultRequestStateTTL = 10 * time.Minute

// WithRequestStateKey sets the key that seals request states (at least 32
// bytes; [New] panics on a shorter one, an empty one included). Every environment of the function
// must share it. Without it a function with call-token keys derives its
// state keys from them ([Start] does), and one without uses a random
// per-process key, so a later round served by another environment is refused.
func WithRequestStateKey(key []byte) Option {
	return func(o *options) { o.stateKey, o.stateKeySet = append([]byte(nil), key...), true }
}

// stateKeys returns the keys that open request states, the sealing one
// first.
func (f *Function) stateKeys(now time.Time) [][]byte {
	if len(f.opts.stateKey) > 0 || f.opts.verifier == nil {
		return [][]byte{f.opts.stateKey}
	}
	return f.opts.verifier.Keyring().StateKeys(now)
}

// errStateRejected is why a request state was refused; the caller hears it
// as a JSON-RPC invalid-params error.
var errStateRejected = errors.New("requestState failed its integrity check (tampered, expired, or issued for another tool, caller or arguments)")

// sealState binds state to the tool, the full verified caller (issuer,
// subject, tenant) and the arguments, with an expiry:
// base64url(expiry ‖ state) "." base64url(HMAC).
func sealState(key []byte, call *Call, state string, now time.Time) string {
	body := make([]byte, 8, 8+len(state))
	binary.BigEndian.PutUint64(body, uint64(now.Add(DefaultRequestStateTTL).Unix()))
	body = append(body, state...)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, call, body))
}

// openState verifies a sealed state with any of keys and returns what the
// tool stored.
func openState(keys [][]byte, call *Call, sealed string, now time.Time) (string, error) {
	b64body, b64mac, ok := strings.Cut(sealed, ".")
	if !ok {
		return "", errStateRejected
	}
	body, err1 := base64.RawURLEncoding.DecodeString(b64body)
	mac, err2 := base64.RawURLEncoding.DecodeString(b64mac)
	if err1 != nil || err2 != nil || len(body) < 8 {
		return "", errStateRejected
	}
	ok = false
	for _, key := range keys {
		ok = ok || hmac.Equal(mac, stateMAC(key, call, body))
	}
	if !ok {
		return "", errStateRejected
	}
	if now.Unix() > int64(binary.BigEndian.Uint64(body[:8])) {
		return "", errStateRejected
	}
	return string(body[8:]), nil
}

func stateMAC(key []byte, call *Call, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	var issuer, subject, method, tenant string
	if c := call.caller; c != nil {
		issuer, subject, method = c.Issuer, c.Subject, c.AuthMethod
	}
	tenant = call.tenant
	// Length-prefixed fields: no two (tool, caller, arguments, body) share
	// an input.
	fields := [][]byte{[]byte("request-state"), []byte(call.Tool), []byte(method), []byte(issuer), []byte(subject), []byte(tenant),
		[]byte(calltoken.ArgsDigest(call.received)), body}
	for _, f := range fields {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write(f)
	}
	return m.Sum(nil)
}

// randomStateKey is the per-process fallback key.
func randomStateKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// decodeInputResponses checks the shape MCP gives inputResponses: an object
// mapping request ids to result objects.
func decodeInputResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("inputResponses must be an object mapping request ids to results: %s", jsonErrorText(err))
	}
	for id, v := range m {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
			return nil, fmt.Errorf("inputResponses[%q] must be a result object", id)
		}
	}
	return m, nil
}

// inputRequiredResult is the CallToolResult of a round that needs input.
func inputRequiredResult(ir *InputRequired, sealed string) (json.RawMessage, error) {
	// Marshalled with encoding/json, as every value the adapter writes
	// (ADR 0012); segmentio only decodes.
	return stdjson.Marshal(struct {
		Content       []textContent           `json:"content"`
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]InputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState,omitempty"`
	}{Content: []textContent{}, ResultType: "input_required", InputRequests: ir.Requests, RequestState: sealed})
}

// decodeRound verifies a multi-round retry's request state and decodes its
// input responses onto the call (step 1).
func (f *Function) decodeRound(call *Call, d *decoded) *Error {
	if d.requestState != "" {
		st, err := openState(f.stateKeys(time.Now()), call, d.requestState, time.Now())
		if err != nil {
			return NewError(CodeBadRequest, err.Error()).WithCause(err)
		}
		call.requestState = st
	}
	responses, err := decodeInputResponses(d.inputResponses)
	if err != nil {
		return NewError(CodeBadRequest, err.Error()).WithCause(err)
	}
	call.inputResponses = responses
	return nil
}

// inputRequired builds the result of a round that asks for input.
func (f *Function) inputRequired(call *Call, ir *InputRequired) (json.RawMessage, error) {
	if len(ir.Requests) == 0 {
		return nil, NewError(CodeInternal, "Internal server error").WithCause(errors.New("RequireInput with no input requests"))
	}
	sealed := ""
	if ir.State != "" {
		sealed = sealState(f.stateKeys(time.Now())[0], call, ir.State, time.Now())
	}
	result, err := inputRequiredResult(ir, sealed)
	if err != nil {
		return nil, NewError(CodeInternal, "Internal server error").WithCause(err)
	}
	return result, nil
}
