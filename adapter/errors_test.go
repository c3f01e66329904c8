package adapter_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
)

// errSharedNotFound is a sentinel as a tool package would declare it.
var errSharedNotFound = adapter.NewError(adapter.CodeNotFound, "no such widget")

// TestErrorWithMethodsLeaveASharedSentinelAlone: concurrent calls refine
// one package-level *Error with WithDetails, WithHint and WithCause; each
// gets its own copy and the sentinel never changes (run under -race: the
// mutating methods this replaced were a data race).
func TestErrorWithMethodsLeaveASharedSentinelAlone(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			cause := errors.New("lookup failed")
			e := errSharedNotFound.WithDetails(map[string]int{"i": i}).WithHint("check the id").WithCause(cause)
			if e == errSharedNotFound || e.Details.(map[string]int)["i"] != i || !errors.Is(e, cause) {
				t.Errorf("call %d got %+v", i, e)
			}
		})
	}
	wg.Wait()
	if errSharedNotFound.Details != nil || errSharedNotFound.Hint != "" || errSharedNotFound.Unwrap() != nil {
		t.Fatalf("the sentinel changed: %+v", errSharedNotFound)
	}
}
