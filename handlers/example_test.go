package handlers_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpfn/mcpfn/handlers"
)

// The catalog is what the gateway lists; each tool runs in its own function.
func ExampleCatalog() {
	for _, tool := range handlers.Catalog() {
		fmt.Printf("%s read-only=%v destructive=%v scopes=%v\n",
			tool.Name(), tool.ReadOnly(), tool.Destructive(), tool.Scopes())
	}
	// Output:
	// broadcast_attach read-only=false destructive=true scopes=[broadcasts:write]
	// broadcast_attachment read-only=true destructive=false scopes=[]
	// broadcast_create read-only=false destructive=false scopes=[]
	// broadcast_delete read-only=false destructive=true scopes=[broadcasts:write]
	// broadcast_digest read-only=true destructive=false scopes=[]
	// broadcast_export read-only=true destructive=false scopes=[]
	// broadcast_get read-only=true destructive=false scopes=[]
	// broadcast_list read-only=true destructive=false scopes=[]
}

// TestCatalogDeclaresWhatFunctionsBind: each catalog entry, declared without
// a store, lists exactly as the tool a function binds to one, in the same
// order; the definitions exist once.
func TestCatalogDeclaresWhatFunctionsBind(t *testing.T) {
	catalog, bound := handlers.Catalog(), handlers.Tools(&handlers.Store{})
	if len(catalog) != len(bound) || len(catalog) == 0 {
		t.Fatalf("%d catalog tools, %d bound", len(catalog), len(bound))
	}
	for i, tool := range catalog {
		la, errA := tool.Listing()
		lb, errB := bound[i].Listing()
		if errA != nil || errB != nil {
			t.Fatalf("tool %d: %v, %v", i, errA, errB)
		}
		a, _ := json.Marshal(la)
		b, _ := json.Marshal(lb)
		if string(a) != string(b) {
			t.Errorf("tool %d: catalog lists\n%s\nthe bound tool\n%s", i, a, b)
		}
	}
}
