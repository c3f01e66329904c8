package audit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/audit"
)

// A final row refused by its conditional write — another execution of the
// call holds the key — is never dropped in silence: it is printed as a
// fallback line saying why, and logged. The row in the table stays, and
// replaying the line counts it refused, not written.
func TestRefusedFinalRowIsPrintedAndLogged(t *testing.T) {
	e := newEnv(t)
	var fb, logs bytes.Buffer
	a := e.auditor(t, audit.Config{Fallback: &fb, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	first := baseRow("call-refused")
	a.Record(ctx, first)
	// A second execution (a resent envelope): same call id, its own span.
	again := baseRow("call-refused")
	again.OK, again.ErrorCode = false, "UNAVAILABLE"
	a.Record(ctx, again)

	if got := str(e.item(t, "call-refused"), "spanId"); got != first.SpanID {
		t.Errorf("spanId %s, want the first execution's %s", got, first.SpanID)
	}
	line := strings.TrimSpace(fb.String())
	if strings.Count(line, "\n") != 0 || !strings.Contains(line, `"reason":"refused: broadcast_delete#call-refused already holds the row of another execution of the call (status done, span `+first.SpanID+`)"`) ||
		!strings.Contains(line, `"spanId":"`+again.SpanID+`"`) {
		t.Errorf("fallback output, want one line with the refused row:\n%s", fb.String())
	}
	if !strings.Contains(logs.String(), "refused") || !strings.Contains(logs.String(), "heldSpanId="+first.SpanID) {
		t.Errorf("log, want a warning naming the row in the way:\n%s", logs.String())
	}
	if st := a.Stats(); st.Written != 1 || st.Duplicates != 1 || st.Refused != 1 || st.Fallbacks != 0 {
		t.Errorf("stats %+v", st)
	}

	st, err := audit.Replay(ctx, strings.NewReader(fb.String()), a, "broadcast_delete")
	if err != nil || st.Found != 1 || st.Refused != 1 || st.Written != 0 || st.Present != 0 {
		t.Errorf("replay: %+v, %v", st, err)
	}
	if got := str(e.item(t, "call-refused"), "spanId"); got != first.SpanID {
		t.Errorf("after replay: spanId %s, want %s", got, first.SpanID)
	}
}

// A final row whose own earlier write is in the way (its answer was lost
// and it was sent again, or its fallback line replayed after all) is a
// duplicate, not a refusal: nothing is printed.
func TestOwnFinalRowSentAgainIsNotRefused(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Fallback: &fb})
	r := baseRow("call-own")
	a.Record(context.Background(), r)
	again := *r
	a.Record(context.Background(), &again)
	if st := a.Stats(); st.Written != 1 || st.Duplicates != 1 || st.Refused != 0 || fb.Len() != 0 {
		t.Errorf("stats %+v, fallback %q", st, fb.String())
	}
}
