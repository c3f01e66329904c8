package adapter_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpfn/mcpfn/adapter"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// A tool is a typed function; the adapter derives its schemas, validates the
// arguments and wraps the output as an MCP result.
func Example() {
	greet := adapter.MustDefine(adapter.ToolDef[greetIn, greetOut]{
		Name:        "greet",
		Description: "Greets someone.",
		ReadOnly:    true,
		Handler: func(_ context.Context, call *adapter.Call, in greetIn) (greetOut, error) {
			if strings.TrimSpace(in.Name) == "" {
				return greetOut{}, adapter.NewError(adapter.CodeValidation, "name is blank")
			}
			call.SetDimension("entityId", in.Name)
			return greetOut{Greeting: "Hello, " + in.Name}, nil
		},
	})
	fn := adapter.New(greet)

	// In main this would be adapter.Start(greet); here we invoke it the way
	// a JSON-RPC client invoking Lambda directly would.
	out, _ := fn.Invoke(context.Background(), []byte(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`))
	fmt.Println(string(out))
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada\"}"}],"structuredContent":{"greeting":"Hello, Ada"}}}
}
