package catalog

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
)

// TestToolsFromEnvAreTheCatalogsDeclaredTools: the gateway's and the
// interceptor's one-pass load gives the tools FromEnv + Declared gives, in
// catalog order.
func TestToolsFromEnvAreTheCatalogsDeclaredTools(t *testing.T) {
	t.Setenv(EnvPath, filepath.Join("..", FileName))
	f, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.Declared()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToolsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	name := func(tools []*adapter.Tool) []string {
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name())
		}
		return out
	}
	if g, w := name(got), name(want); !slices.Equal(g, w) || len(g) == 0 {
		t.Errorf("ToolsFromEnv = %v, want %v", g, w)
	}
	for i := range got {
		if string(mustJSON(t, got[i].Declaration())) != string(mustJSON(t, want[i].Declaration())) {
			t.Errorf("tool %s: declarations differ", got[i].Name())
		}
	}

	t.Setenv(EnvPath, filepath.Join(t.TempDir(), FileName))
	if _, err := ToolsFromEnv(); err == nil {
		t.Error("ToolsFromEnv with no catalog file: no error")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
