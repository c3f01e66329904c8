package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// GatewayWriter is the writer of the rows the gateway writes for the calls
// its functions did not answer: their key is "gateway#<callId>", which only
// the gateway's role may write (dynamodb:LeadingKeys), and which no tool's
// rows can take (a tool may not be named so). A function's own rows of the
// same call (write-ahead and final) are "<tool>#<callId>": the two writers
// never compete for a key.
const GatewayWriter = "gateway"

// Which row of a [Call] is its outcome.
const (
	OutcomeByFunction = "function"
	OutcomeByGateway  = "gateway"
)

// Call is one tool call as the audit table records it: the rows of its call
// id, joined. Every call has exactly one outcome: the function's final row
// when the function ran and wrote it; else the gateway's row (the function
// never saw the call, or never answered it); else — nothing but a
// write-ahead row, its process died — the function's pending row.
type Call struct {
	CallID string `json:"callId"`
	// OutcomeBy names the row that is the call's outcome (OutcomeByFunction
	// or OutcomeByGateway); [Call.Outcome] returns it.
	OutcomeBy string `json:"outcomeBy"`
	// Function is the row the tool's function wrote (final or pending).
	Function *Row `json:"function,omitempty"`
	// Gateway is the row the gateway wrote: what it told the caller when
	// its function did not answer, and whether the function may have run
	// (Outcome "unknown").
	Gateway *Row `json:"gateway,omitempty"`
}

// Outcome is the row that is the call's outcome (see [Call]).
func (c *Call) Outcome() *Row {
	if c.OutcomeBy == OutcomeByGateway {
		return c.Gateway
	}
	return c.Function
}

// Rows is the call's rows, the outcome first.
func (c *Call) Rows() []*Row {
	var out []*Row
	for _, r := range []*Row{c.Outcome(), c.Function, c.Gateway} {
		if r != nil && (len(out) == 0 || out[0] != r) {
			out = append(out, r)
		}
	}
	return out
}

// settle applies the outcome rule.
func (c *Call) settle() {
	switch {
	case c.Function != nil && c.Function.Status != StatusPending:
		c.OutcomeBy = OutcomeByFunction
	case c.Gateway != nil:
		c.OutcomeBy = OutcomeByGateway
	default:
		c.OutcomeBy = OutcomeByFunction
	}
}

// IsGatewayRow reports whether the gateway wrote r: its writer is
// GatewayWriter (and its key "gateway#<callId>"). The gateway always names
// itself; a row that names no writer is its tool's.
func IsGatewayRow(r *Row) bool { return r.Writer == GatewayWriter }

// JoinCalls joins rows by call id into calls, in the order of each call's
// first row. Rows of one writer and call id are one row in the table; should
// rows hold two of them anyway (two listings appended), a final row is kept
// over a pending one, else the first.
func JoinCalls(rows []Row) []Call {
	var calls []Call
	at := map[string]int{}
	for i := range rows {
		r := &rows[i]
		n, ok := at[r.CallID]
		if !ok || r.CallID == "" {
			n = len(calls)
			at[r.CallID] = n
			calls = append(calls, Call{CallID: r.CallID})
		}
		c := &calls[n]
		slot := &c.Function
		if IsGatewayRow(r) {
			slot = &c.Gateway
		}
		if *slot == nil || ((*slot).Status == StatusPending && r.Status != StatusPending) {
			*slot = r
		}
	}
	for i := range calls {
		calls[i].settle()
	}
	return calls
}

// BatchGetAPI is what [Auditor.CompleteCalls] uses, when the client has it,
// to read the missing rows of many calls in one request per hundred.
type BatchGetAPI interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// CompleteCalls reads, for each call, the row of the other writer that the
// listing it came from did not hold (an entity's listing has the function's
// rows only: the gateway's row names no entity), and settles each call's
// outcome again. Missing rows are read by key: "gateway#<callId>", or the
// tool's "<tool>#<callId>" for a call known only by its gateway row.
func (a *Auditor) CompleteCalls(ctx context.Context, calls []Call) error {
	type want struct {
		call    int
		gateway bool
	}
	var keys []string
	wanted := map[string]want{}
	for i := range calls {
		c := &calls[i]
		var k string
		switch {
		case c.CallID == "":
			continue
		case c.Gateway == nil:
			k = RowKey(GatewayWriter, c.CallID)
		case c.Function == nil && c.Gateway.Tool != "" && c.Gateway.Tool != GatewayWriter:
			k = RowKey(c.Gateway.Tool, c.CallID)
		default:
			continue
		}
		if _, dup := wanted[k]; !dup {
			keys = append(keys, k)
		}
		wanted[k] = want{i, c.Gateway == nil}
	}
	found, err := a.rowsByKey(ctx, keys)
	for k, r := range found {
		w := wanted[k]
		c := &calls[w.call]
		if w.gateway {
			c.Gateway = r
		} else {
			c.Function = r
		}
		c.settle()
	}
	return err
}

// rowsByKey reads the rows of keys: BatchGetItem a hundred keys at a time
// when the client has it, else one Query per key.
func (a *Auditor) rowsByKey(ctx context.Context, keys []string) (map[string]*Row, error) {
	out := map[string]*Row{}
	bg, ok := a.cfg.Client.(BatchGetAPI)
	if !ok {
		for _, k := range keys {
			writer, id, _ := strings.Cut(k, "#")
			r, found, err := a.CallRow(ctx, writer, id)
			if err != nil {
				return out, err
			}
			if found {
				out[k] = &r
			}
		}
		return out, nil
	}
	for len(keys) > 0 {
		n := min(len(keys), 100)
		req := make([]map[string]types.AttributeValue, 0, n)
		for _, k := range keys[:n] {
			req = append(req, map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: k}})
		}
		keys = keys[n:]
		in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{a.cfg.Table: {Keys: req}}}
		// Unprocessed keys (throttling, the 16 MB response limit) are
		// asked again, a bounded number of times.
		for round := 0; len(in.RequestItems) > 0; round++ {
			if round == 5 {
				return out, fmt.Errorf("audit: batch get: %d keys still unprocessed", len(in.RequestItems[a.cfg.Table].Keys))
			}
			res, err := bg.BatchGetItem(ctx, in)
			if err != nil {
				return out, fmt.Errorf("audit: batch get: %w", err)
			}
			for _, item := range res.Responses[a.cfg.Table] {
				r, err := rowFromItem(item)
				if err != nil {
					return out, fmt.Errorf("audit: decode row: %w", err)
				}
				if k, ok := item[KeyAttribute].(*types.AttributeValueMemberS); ok {
					out[k.Value] = &r
				}
			}
			in.RequestItems = res.UnprocessedKeys
		}
	}
	return out, nil
}

// The SDK's client has the optional interface.
var _ BatchGetAPI = (*dynamodb.Client)(nil)
