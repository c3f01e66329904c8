package handlers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/adapter"
)

// TestToolError: what a caller reads for each kind of store failure. An
// unexpected error stays raw, so that the adapter scrubs it for the caller
// and the audit row keeps it whole.
func TestToolError(t *testing.T) {
	raw := errors.New("dial tcp 10.0.0.7:443: connection refused")
	for _, tc := range []struct {
		err       error
		code      adapter.Code
		retryable bool
	}{
		{ErrNotFound, adapter.CodeNotFound, false},
		{fmt.Errorf("%w: not base64url", ErrBadCursor), adapter.CodeValidation, false},
		{fmt.Errorf("handlers: getting broadcast: %w", context.DeadlineExceeded), adapter.CodeTimeout, true},
		{fmt.Errorf("handlers: putting broadcast: %w", &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"}), adapter.CodeRateLimited, true},
		{fmt.Errorf("handlers: listing: %w", &smithy.GenericAPIError{Code: "ThrottlingException"}), adapter.CodeRateLimited, true},
		{raw, adapter.CodeInternal, false},
	} {
		got := toolError(tc.err)
		if adapter.CodeOf(got) != tc.code {
			t.Errorf("%v → %v, want %s", tc.err, got, tc.code)
			continue
		}
		var ae *adapter.Error
		if errors.As(got, &ae) {
			if ae.Retryable != tc.retryable {
				t.Errorf("%v: retryable %v", tc.err, ae.Retryable)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("%v: cause lost", tc.err)
			}
		} else if got != raw {
			t.Errorf("unexpected error rewritten to %v", got)
		}
	}
}

func TestStoreFromEnv(t *testing.T) {
	t.Setenv(TableEnv, "")
	if _, err := StoreFromEnv(t.Context()); err == nil {
		t.Fatalf("no error without %s", TableEnv)
	}
	t.Setenv(TableEnv, "broadcasts-test")
	t.Setenv("AWS_REGION", "eu-west-1")
	s, err := StoreFromEnv(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Table() != "broadcasts-test" {
		t.Fatalf("table %q", s.Table())
	}
}

// TestNewIDIsStablePerCall: a retried call (same call id) gets the same
// broadcast id; different calls, and calls without an id, get different ones.
func TestNewIDIsStablePerCall(t *testing.T) {
	a, b := &adapter.Call{ID: "call-1"}, &adapter.Call{ID: "call-2"}
	if newID(a) != newID(&adapter.Call{ID: "call-1"}) {
		t.Fatal("same call id, different broadcast ids")
	}
	r1, r2 := newID(nil), newID(nil)
	if newID(a) == newID(b) || r1 == r2 {
		t.Fatal("distinct calls share an id")
	}
	for _, id := range []string{newID(a), newID(nil)} {
		if !idPattern.MatchString(id) {
			t.Fatalf("id %q does not match the schema's pattern", id)
		}
	}
}
