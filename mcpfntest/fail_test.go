package mcpfntest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

// fatalTB is the test's own TB, but a fatal failure is caught: the kit's
// own failures are what these tests check.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatal(args ...any) { f.msg = fmt.Sprint(args...); runtime.Goexit() }

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs use with a fatalTB on a goroutine of its own, as a test
// function runs, and returns how it failed ("" when it did not).
func fatal(t *testing.T, use func(tb testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		use(tb)
	}()
	<-done
	return tb.msg
}

func TestTheKitFailsTheTestWhenACallCannotBeMade(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(tb testing.TB)
		want string
	}{
		{"Output of a failed call", func(tb testing.TB) {
			mcpfntest.Output[addOut](tb, mcpfntest.Call(tb, noteAdd.Bind(newNotebook()), map[string]any{"text": "x"}, mcpfntest.As("bob")))
		}, "the call failed: FORBIDDEN"},
		{"a tenant without a caller", func(tb testing.TB) {
			mcpfntest.Call(tb, echo, map[string]any{"text": "x"}, mcpfntest.Anonymous(), mcpfntest.Tenant("acme"))
		}, "Anonymous has no caller"},
		{"input requested, no Answer", func(tb testing.TB) {
			mcpfntest.Call(tb, greeter, nil)
		}, "no mcpfntest.Answer"},
		{"arguments that do not marshal", func(tb testing.TB) {
			mcpfntest.Call(tb, echo, map[string]any{"text": make(chan int)})
		}, "do not marshal"},
		{"the rows taken by WithAuditor", func(tb testing.TB) {
			mcpfntest.New(tb, echo, adapter.WithAuditor(nil)).Call(tb, map[string]any{"text": "x"})
		}, "mcpfntest.AuditTo instead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fatal(t, tc.use); !strings.Contains(got, tc.want) {
				t.Fatalf("failed with %q, want %q", got, tc.want)
			}
		})
	}
}
