package mcpfntest_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

// A test calls its tool and reads the output, typed, and the audit row the
// call would write.
func ExampleCall() {
	type helloIn struct {
		Name string `json:"name"`
	}
	type helloOut struct {
		Greeting string `json:"greeting"`
	}
	hello := adapter.MustDefine(adapter.ToolDef[helloIn, helloOut]{
		Name: "hello",
		Handler: func(_ context.Context, call *adapter.Call, in helloIn) (helloOut, error) {
			call.SetDimension("entityId", in.Name)
			return helloOut{Greeting: "Hello, " + in.Name}, nil
		},
	})

	res := mcpfntest.Call(t, hello, map[string]any{"name": "Ada"})
	out := mcpfntest.Output[helloOut](t, res)
	fmt.Println(out.Greeting)
	row := res.Rows[0]
	fmt.Println(row.Tool, row.CallerSubject, row.OK, row.Dimensions["entityId"])
	// Output:
	// Hello, Ada
	// hello test-user true Ada
}

// A tool that requires scopes fails closed: without a verified caller, and
// for a caller without its scope. Each refusal leaves its row.
func ExampleAs() {
	type in struct {
		ID string `json:"id"`
	}
	type out struct {
		Archived bool `json:"archived"`
	}
	archive := adapter.MustDefine(adapter.ToolDef[in, out]{
		Name:   "archive",
		Scopes: []string{"docs:write"},
		Handler: func(context.Context, *adapter.Call, in) (out, error) {
			return out{Archived: true}, nil
		},
	})
	f := mcpfntest.New(t, archive)
	args := map[string]any{"id": "d1"}

	res := f.Call(t, args, mcpfntest.As("ann", "docs:write"))
	fmt.Println(mcpfntest.Output[out](t, res).Archived)

	res = f.Call(t, args, mcpfntest.As("bob", "docs:read"))
	fmt.Println(res.Code(), res.Err.Details, res.Rows[0].CallerSubject)

	res = f.Call(t, args, mcpfntest.Anonymous())
	fmt.Println(res.Code(), res.Rows[0].ErrorCode)
	// Output:
	// true
	// FORBIDDEN map[missingScopes:[docs:write]] bob
	// UNAUTHORIZED UNAUTHORIZED
}

// A tool declared with adapter.Declare is tested bound to a dependency of the
// test's own, where its function's main binds one built from its
// environment. A destructive tool runs at most once per call id.
func ExampleNew() {
	type takeIn struct {
		Item string `json:"item"`
	}
	type takeOut struct {
		Left int `json:"left"`
	}
	take := adapter.Declare(adapter.ToolDef[takeIn, takeOut]{Name: "stock_take", Destructive: true},
		func(stock map[string]int, _ context.Context, _ *adapter.Call, in takeIn) (takeOut, error) {
			if stock[in.Item] == 0 {
				return takeOut{}, adapter.NewError(adapter.CodeNotFound, "none left")
			}
			stock[in.Item]--
			return takeOut{Left: stock[in.Item]}, nil
		})

	stock := map[string]int{"apple": 2}
	f := mcpfntest.New(t, take.Bind(stock))
	res := f.Call(t, map[string]any{"item": "apple"}, mcpfntest.CallID("take-1"))
	fmt.Println(mcpfntest.Output[takeOut](t, res).Left)
	for _, row := range res.Rows {
		fmt.Println(row.Status, row.CallID)
	}

	replay := f.Call(t, map[string]any{"item": "apple"}, mcpfntest.CallID("take-1"))
	fmt.Println(replay.Code(), stock["apple"])
	// Output:
	// 1
	// pending take-1
	// done take-1
	// CONFLICT 1
}

// A tool that asks the user for input is answered round after round.
func ExampleAnswer() {
	type out struct {
		Confirmed bool `json:"confirmed"`
	}
	confirm := adapter.MustDefine(adapter.ToolDef[struct{}, out]{
		Name: "confirm",
		Handler: func(_ context.Context, call *adapter.Call, _ struct{}) (out, error) {
			answer, ok := call.InputResponses()["sure"]
			if !ok {
				return out{}, adapter.RequireInput(map[string]adapter.InputRequest{
					"sure": {Method: "elicitation/create", Params: map[string]any{"message": "Sure?"}},
				}, "")
			}
			return out{Confirmed: strings.Contains(string(answer), `"accept"`)}, nil
		},
	})

	res := mcpfntest.Call(t, confirm, nil, mcpfntest.Answer(func(key string, req adapter.InputRequest) any {
		fmt.Println("asked", key, req.Method)
		return map[string]any{"action": "accept"}
	}))
	fmt.Println(mcpfntest.Output[out](t, res).Confirmed, res.Rounds, res.Rows[0].MCPOutcome, res.Rows[1].MCPOutcome)
	// Output:
	// asked sure elicitation/create
	// true 2 input_required complete
}

// DB holds the tables of the project's template.yaml in DynamoDB Local: here
// the audit table, so that a real auditor writes the calls' rows there and
// the test reads them back by entity, as an operator would.
func ExampleDB_Table() {
	type in struct {
		Order string `json:"order"`
	}
	type out struct {
		Shipped bool `json:"shipped"`
	}
	ship := adapter.MustDefine(adapter.ToolDef[in, out]{
		Name: "ship",
		Handler: func(_ context.Context, call *adapter.Call, in in) (out, error) {
			call.SetDimension("entityId", in.Order)
			return out{Shipped: true}, nil
		},
	})

	db := mcpfntest.DynamoDB(t)
	auditor := audit.New(audit.Config{Table: db.Table(t, "AuditTable"), Client: db.Client()})
	f := mcpfntest.New(t, ship, mcpfntest.AuditTo(auditor))
	f.Call(t, map[string]any{"order": "o-42"}, mcpfntest.As("ann"))

	rows, err := auditor.EntityRows(context.Background(), "entityId", "o-42", audit.QueryOptions{})
	if err != nil {
		panic(err)
	}
	for _, row := range rows {
		fmt.Println(row.Tool, row.Status, row.CallerSubject, row.ArgsPreview)
	}
	// Output:
	// ship done ann {"order":"o-42"}
}

// t stands for the *testing.T of a test in these examples, which have none:
// it is enough of one for the kit, and a failure panics.
var t testing.TB = exampleT{}

type exampleT struct{ testing.TB }

func (exampleT) Helper()                  {}
func (exampleT) Name() string             { return "Example" }
func (exampleT) Context() context.Context { return context.Background() }
func (exampleT) Output() io.Writer        { return io.Discard }
func (exampleT) Fatal(args ...any)        { panic(fmt.Sprint(args...)) }
func (exampleT) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
func (exampleT) Skipf(format string, args ...any) {
	panic("an example cannot skip: " + fmt.Sprintf(format, args...))
}
