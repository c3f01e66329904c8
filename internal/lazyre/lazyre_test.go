package lazyre_test

import (
	"testing"

	"github.com/mcpfn/mcpfn/internal/lazyre"
)

func TestCompiledOnFirstUseOnly(t *testing.T) {
	// Nothing is compiled before the first call: an invalid expression
	// does not panic yet.
	bad := lazyre.New(`(`)
	re := lazyre.New(`^a+$`)
	first := re()
	if re() != first {
		t.Error("a second call compiled again")
	}
	if !re().MatchString("aaa") || re().MatchString("b") {
		t.Error("wrong expression")
	}
	defer func() {
		if recover() == nil {
			t.Error("an invalid expression did not panic on first use")
		}
	}()
	bad()
}
