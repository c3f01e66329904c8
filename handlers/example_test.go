package handlers_test

import (
	"fmt"

	"github.com/mcpfn/mcpfn/handlers"
)

// The catalog is what the gateway lists; each tool runs in its own function.
func ExampleCatalog() {
	for _, tool := range handlers.Catalog() {
		mt := tool.MCPTool()
		fmt.Printf("%s read-only=%v destructive=%v scopes=%v\n",
			tool.Name(), mt.Annotations.ReadOnlyHint, tool.Destructive(), tool.Scopes())
	}
	// Output:
	// broadcast_create read-only=false destructive=false scopes=[]
	// broadcast_get read-only=true destructive=false scopes=[]
	// broadcast_list read-only=true destructive=false scopes=[]
	// broadcast_delete read-only=false destructive=true scopes=[broadcasts:write]
}
