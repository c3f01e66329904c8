package adapter

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/wire"
)

// Call is the per-call context: rebuilt for every call from its invocation,
// never shared with another call. Hooks and the handler receive it. Safe for
// concurrent use by the goroutines of one call.
//
// What a hook may change, and nothing else: the arguments (only by returning
// a replacement from BeforeToolCall), the output (from AfterHandle), the
// call's dimensions ([Call.SetDimension]) and its teardowns. The verified
// facts — [Call.Caller], [Call.Tenant], [Call.Trace] — are settled in step 1
// and read through methods; the other fields are facts of the invocation,
// copied into the call for reading.
type Call struct {
	ID        string
	Source    Source
	Tool      string
	MCP       *MCPMeta // nil for non-MCP calls
	SessionID string   // caller data, never identity: see SessionKey
	Lambda    LambdaFacts
	StartedAt time.Time
	// Arguments are the call's arguments as JSON: as received, or as replaced
	// by BeforeToolCall.
	Arguments json.RawMessage

	// AgentCore holds the AgentCore Gateway facts for SourceAgentCore calls.
	AgentCore *AgentCoreFacts

	// The verified facts (identity.go, trace.go): written in step 1 only.
	caller *Identity // nil when no identity was verified; never synthesised
	tenant string
	trace  Trace

	mu    sync.Mutex
	dims  map[string]string
	creds boundCredentials

	teardown teardownList

	// received are the arguments as the call token bound them (before any
	// BeforeToolCall replaced them); multi-round state is bound to them too.
	received json.RawMessage
	// argsRef is where the gateway stored the arguments (claimcheck.go).
	argsRef *wire.ObjectRef
	// argsKnown: the payload was decoded far enough to say what the
	// arguments are (absent ones included), for the row's digest.
	argsKnown bool
	// claimed is a caller the payload named without a token that verified:
	// recorded in the audit row as unverified, nothing else.
	claimed *Identity

	// Multi-round input (multiround.go).
	inputResponses map[string]json.RawMessage
	requestState   string

	// Long-running calls: where Progress and Log go (progress.go), and the
	// task this call runs (task.go).
	notes  *notifier
	taskID string
}

// TaskID returns the id of the task this call runs (the MCP Tasks
// extension), "" for a synchronous call.
func (c *Call) TaskID() string { return c.taskID }

// LambdaFacts are the execution facts of the invocation.
type LambdaFacts struct {
	RequestID       string
	FunctionARN     string
	FunctionName    string
	FunctionVersion string
	Deadline        time.Time // Lambda's own deadline (the call's context ends reserve earlier)
	ColdStart       bool
	TenantID        string // Lambda tenant isolation id, if any
}

// SetDimension records key=value on this call (e.g. "entityId"). The audit
// row carries the call's dimensions; they never reach another call.
func (c *Call) SetDimension(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dims == nil {
		c.dims = make(map[string]string)
	}
	c.dims[key] = value
}

// Dimension returns the value recorded for key.
func (c *Call) Dimension(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.dims[key]
	return v, ok
}

// Dimensions returns a copy of the call's dimensions.
func (c *Call) Dimensions() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.dims)
}

type callKey struct{}

// CallFrom returns the Call of ctx, when ctx is (derived from) a call's context.
func CallFrom(ctx context.Context) (*Call, bool) {
	c, ok := ctx.Value(callKey{}).(*Call)
	return c, ok
}

// buildCall is step 1's second half: the per-call context, from the decoded
// invocation and the Lambda context only.
func (f *Function) buildCall(ctx context.Context, d *decoded, index int, lc *lambdacontext.LambdaContext, cold bool, started time.Time) *Call {
	c := &Call{
		ID:        d.callID,
		Source:    d.source,
		Tool:      d.toolName,
		MCP:       d.mcp,
		SessionID: d.sessionID,
		StartedAt: started,
		Arguments: d.args,
		received:  d.args,
		argsKnown: d.err == nil,
		AgentCore: d.agentCore,
		teardown:  teardownList{scopes: f.opts.teardownScopes, env: f.envTD},
	}
	c.Lambda = LambdaFacts{
		FunctionName:    lambdacontext.FunctionName,
		FunctionVersion: lambdacontext.FunctionVersion,
		ColdStart:       cold,
	}
	if dl, ok := ctx.Deadline(); ok {
		c.Lambda.Deadline = dl
	}
	if lc != nil {
		c.Lambda.RequestID = lc.AwsRequestID
		c.Lambda.FunctionARN = lc.InvokedFunctionArn
		c.Lambda.TenantID = lc.TenantID
		c.tenant = lc.TenantID
	}
	if c.ID == "" {
		base := c.Lambda.RequestID
		if base == "" {
			base = wire.NewCallID()
		}
		c.ID = base + "#" + strconv.Itoa(index)
	}
	c.trace = traceOf(ctx, d, started)
	c.notes = newNotifier(d.toolName, d.stream, d.frames)
	c.creds.provider = f.opts.credentials
	return c
}
