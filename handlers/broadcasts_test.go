package handlers_test

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

// missingID is a well-formed id no test creates.
const missingID = "AAAAAAAAAAAAAAAAAAAAAAAAAA"

func TestCreateGetListDelete(t *testing.T) {
	a := newApp(t)

	created := mcpfntest.Output[handlers.CreateOutput](t, a.call(t, handlers.ToolCreate, map[string]any{"channel": "general", "text": "hello"}, reader))
	if len(created.ID) != 26 || created.CreatedAt == "" {
		t.Fatalf("create returned %+v", created)
	}

	got := mcpfntest.Output[handlers.Broadcast](t, a.call(t, handlers.ToolGet, map[string]any{"id": created.ID}, anonymous))
	want := handlers.Broadcast{ID: created.ID, Channel: "general", Text: "hello", CreatedAt: created.CreatedAt}
	if got != want {
		t.Fatalf("get = %+v, want %+v", got, want)
	}

	page := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, map[string]any{"channel": "general"}, anonymous))
	if len(page.Items) != 1 || page.Items[0] != want || page.NextCursor != "" {
		t.Fatalf("list = %+v", page)
	}
	empty := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, map[string]any{"channel": "elsewhere"}, anonymous))
	if len(empty.Items) != 0 || empty.NextCursor != "" {
		t.Fatalf("list of an empty channel = %+v", empty)
	}

	deleted := mcpfntest.Output[handlers.DeleteOutput](t, a.call(t, handlers.ToolDelete, map[string]any{"id": created.ID}, writer))
	if deleted.Deleted != want {
		t.Fatalf("delete returned %+v, want %+v", deleted.Deleted, want)
	}
	wantCode(t, a.call(t, handlers.ToolGet, map[string]any{"id": created.ID}, anonymous), adapter.CodeNotFound)

	// Every call recorded the entity it touched.
	final, _ := a.rows(t)
	for _, row := range final {
		wantEntity := created.ID
		if row.Tool == handlers.ToolList {
			wantEntity = row.Dimensions[handlers.DimensionEntity] // the channel
			if wantEntity != "general" && wantEntity != "elsewhere" {
				t.Errorf("list row entity %q", wantEntity)
			}
		}
		if got := row.Dimensions[handlers.DimensionEntity]; got != wantEntity {
			t.Errorf("%s row: entityId %q, want %q", row.Tool, got, wantEntity)
		}
	}
}

func TestMissingIsNotFound(t *testing.T) {
	a := newApp(t)
	wantCode(t, a.call(t, handlers.ToolGet, map[string]any{"id": missingID}, anonymous), adapter.CodeNotFound)
	r := a.call(t, handlers.ToolDelete, map[string]any{"id": missingID}, writer)
	wantCode(t, r, adapter.CodeNotFound)
	if r.Err.Retryable {
		t.Error("NOT_FOUND marked retryable")
	}
}

func TestDeleteNeedsScope(t *testing.T) {
	a := newApp(t)
	created := mcpfntest.Output[handlers.CreateOutput](t, a.call(t, handlers.ToolCreate, map[string]any{"channel": "general", "text": "keep me"}, reader))

	wantCode(t, a.call(t, handlers.ToolDelete, map[string]any{"id": created.ID}, reader), adapter.CodeForbidden)
	wantCode(t, a.call(t, handlers.ToolDelete, map[string]any{"id": created.ID}, anonymous), adapter.CodeUnauthorized)

	// Refused calls changed nothing.
	mcpfntest.Output[handlers.Broadcast](t, a.call(t, handlers.ToolGet, map[string]any{"id": created.ID}, anonymous))
}

func TestInputLimitsAreInTheSchema(t *testing.T) {
	a := newApp(t)
	for name, args := range map[string]map[string]any{
		"empty channel":     {"channel": "", "text": "x"},
		"channel pattern":   {"channel": "No Spaces", "text": "x"},
		"channel too long":  {"channel": strings.Repeat("c", 65), "text": "x"},
		"empty text":        {"channel": "general", "text": ""},
		"text too long":     {"channel": "general", "text": strings.Repeat("x", 4001)},
		"missing text":      {"channel": "general"},
		"unknown property":  {"channel": "general", "text": "x", "priority": 1},
		"channel not a str": {"channel": 7, "text": "x"},
	} {
		t.Run(name, func(t *testing.T) {
			wantCode(t, a.call(t, handlers.ToolCreate, args, reader), adapter.CodeValidation)
		})
	}
	wantCode(t, a.call(t, handlers.ToolGet, map[string]any{"id": "../etc/passwd"}, anonymous), adapter.CodeValidation)
	wantCode(t, a.call(t, handlers.ToolList, map[string]any{"channel": "general", "limit": 0}, anonymous), adapter.CodeValidation)
	wantCode(t, a.call(t, handlers.ToolList, map[string]any{"channel": "general", "limit": 101}, anonymous), adapter.CodeValidation)
}

func TestCreateRetryIsIdempotent(t *testing.T) {
	a := newApp(t)
	args := map[string]any{"channel": "general", "text": "once"}
	first := mcpfntest.Output[handlers.CreateOutput](t, a.call(t, handlers.ToolCreate, args, reader, mcpfntest.CallID("retried-call")))
	again := mcpfntest.Output[handlers.CreateOutput](t, a.call(t, handlers.ToolCreate, args, reader, mcpfntest.CallID("retried-call")))
	if again != first {
		t.Fatalf("retry returned %+v, first call %+v", again, first)
	}
	page := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, map[string]any{"channel": "general"}, anonymous))
	if len(page.Items) != 1 {
		t.Fatalf("a retried create posted %d broadcasts", len(page.Items))
	}
	// The same call id with other arguments is not a retry.
	wantCode(t, a.call(t, handlers.ToolCreate, map[string]any{"channel": "general", "text": "twice"}, reader, mcpfntest.CallID("retried-call")), adapter.CodeConflict)
	// A new call posts a new broadcast.
	other := mcpfntest.Output[handlers.CreateOutput](t, a.call(t, handlers.ToolCreate, args, reader))
	if other.ID == first.ID {
		t.Fatal("two calls got one id")
	}
}

func TestListPaginates250(t *testing.T) {
	a := newApp(t)
	const n = 250
	ids := createMany(t, a, "busy", n, 8)
	// Noise in another channel must not leak into the listing.
	createMany(t, a, "quiet", 5, 5)

	for _, limit := range []int{0, 7, 100} { // 0: the default (25)
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			seen := map[string]bool{}
			var all []handlers.Broadcast
			cursor, pages := "", 0
			for {
				args := map[string]any{"channel": "busy"}
				if limit > 0 {
					args["limit"] = limit
				}
				if cursor != "" {
					args["cursor"] = cursor
				}
				page := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, args, anonymous))
				pages++
				want := cmp.Or(limit, 25)
				if len(page.Items) > want || (page.NextCursor != "" && len(page.Items) != want) {
					t.Fatalf("page %d: %d items with limit %d (next %q)", pages, len(page.Items), want, page.NextCursor)
				}
				for _, b := range page.Items {
					if seen[b.ID] {
						t.Fatalf("page %d repeats %s", pages, b.ID)
					}
					seen[b.ID] = true
				}
				all = append(all, page.Items...)
				if page.NextCursor == "" {
					break
				}
				if pages > n {
					t.Fatal("pagination does not end")
				}
				cursor = page.NextCursor
			}
			if len(all) != n {
				t.Fatalf("listed %d broadcasts, created %d", len(all), n)
			}
			for _, id := range ids {
				if !seen[id] {
					t.Fatalf("created %s, never listed", id)
				}
			}
			if !slices.IsSortedFunc(all, func(x, y handlers.Broadcast) int { return strings.Compare(y.CreatedAt, x.CreatedAt) }) {
				t.Fatal("not newest first")
			}
			// A full last page (250 = 10×25) must not hand out a cursor to
			// an empty page.
			perPage := cmp.Or(limit, 25)
			if wantPages := (n + perPage - 1) / perPage; pages != wantPages {
				t.Fatalf("%d pages, want %d", pages, wantPages)
			}
		})
	}
}

// withField returns the JSON object raw with field set to value.
func withField(t *testing.T, raw []byte, field, value string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m[field] = value
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTamperedCursorIsValidationError(t *testing.T) {
	a := newApp(t)
	createMany(t, a, "busy", 3, 3)
	page := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, map[string]any{"channel": "busy", "limit": 1}, anonymous))
	if page.NextCursor == "" {
		t.Fatal("no cursor after a page of 1 of 3")
	}
	raw, err := base64.RawURLEncoding.DecodeString(page.NextCursor)
	if err != nil {
		t.Fatalf("cursor is not base64url: %v", err)
	}
	reencode := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	flipped := []byte(page.NextCursor)
	flipped[len(flipped)/2] ^= 0x01

	for name, cursor := range map[string]string{
		"garbage":        "not a cursor!",
		"flipped byte":   string(flipped),
		"padded":         page.NextCursor + "==",
		"not json":       reencode("hello"),
		"extra field":    reencode(strings.Replace(string(raw), "{", `{"x":1,`, 1)),
		"other version":  reencode(strings.Replace(string(raw), `"v":1`, `"v":2`, 1)),
		"moved position": reencode(withField(t, raw, "i", missingID)),
		"no checksum":    reencode(withField(t, raw, "s", "")),
		"bad id":         reencode(strings.Replace(string(raw), `"i":"`, `"i":"../`, 1)),
		"bad time":       reencode(strings.Replace(string(raw), `"t":"`, `"t":"x`, 1)),
		"trailing data":  reencode(string(raw) + "{}"),
		"other channel":  page.NextCursor, // sent with channel "quiet" below
		"way too long":   strings.Repeat("A", 513),
		"empty json obj": reencode("{}"),
	} {
		t.Run(name, func(t *testing.T) {
			channel := "busy"
			if name == "other channel" {
				channel = "quiet"
			}
			r := a.call(t, handlers.ToolList, map[string]any{"channel": channel, "cursor": cursor}, anonymous)
			wantCode(t, r, adapter.CodeValidation)
		})
	}
	// The untampered cursor still works.
	next := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, map[string]any{"channel": "busy", "limit": 1, "cursor": page.NextCursor}, anonymous))
	if len(next.Items) != 1 || next.Items[0].ID == page.Items[0].ID {
		t.Fatalf("second page %+v", next)
	}
}

// TestConcurrentStorm creates and deletes many broadcasts at once, each
// delete racing the creates of other ids, and checks that the table holds
// exactly the survivors and that every call left exactly its audit rows.
func TestConcurrentStorm(t *testing.T) {
	a := newApp(t)
	const n = 120
	ids := createMany(t, a, "storm", n, 16)

	// Delete the even-indexed half while creating a second wave, all at once.
	var wg sync.WaitGroup
	errs := make(chan string, 2*n)
	var waveMu sync.Mutex
	var wave []string
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				r := a.call(t, handlers.ToolDelete, map[string]any{"id": ids[i]}, writer)
				if r.IsError {
					errs <- fmt.Sprintf("delete %s: %s %s", ids[i], r.Code(), r.Err.Message)
				}
				return
			}
			r := a.call(t, handlers.ToolCreate, map[string]any{"channel": "storm", "text": fmt.Sprintf("wave %d", i)}, reader)
			if r.IsError {
				errs <- fmt.Sprintf("create: %s %s", r.Code(), r.Err.Message)
				return
			}
			out := mcpfntest.Output[handlers.CreateOutput](t, r)
			waveMu.Lock()
			wave = append(wave, out.ID)
			waveMu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		return
	}

	want := map[string]bool{}
	for i, id := range ids {
		if i%2 == 1 {
			want[id] = true
		}
	}
	for _, id := range wave {
		want[id] = true
	}
	got := map[string]bool{}
	cursor := ""
	for {
		args := map[string]any{"channel": "storm", "limit": 100}
		if cursor != "" {
			args["cursor"] = cursor
		}
		page := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, args, anonymous))
		for _, b := range page.Items {
			got[b.ID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(got) != len(want) {
		t.Errorf("table holds %d broadcasts, want %d", len(got), len(want))
	}
	for id := range want {
		if !got[id] {
			t.Errorf("%s missing", id)
		}
	}
	for i, id := range ids {
		if i%2 == 0 {
			wantCode(t, a.call(t, handlers.ToolGet, map[string]any{"id": id}, anonymous), adapter.CodeNotFound)
		}
	}

	// Audit: one final row per call, each naming its own entity; one
	// write-ahead row per delete, for the same call and entity.
	rows, pending := a.rows(t)
	deletes := map[string]string{} // call id → entity
	for id, row := range rows {
		if row.Tool == handlers.ToolGet {
			continue // the NOT_FOUND checks above
		}
		if !row.OK {
			t.Errorf("call %s (%s) audited as failed: %s", id, row.Tool, row.ErrorCode)
		}
		if row.Dimensions[handlers.DimensionEntity] == "" {
			t.Errorf("call %s (%s) has no entityId", id, row.Tool)
		}
		if row.Tool == handlers.ToolDelete {
			deletes[id] = row.Dimensions[handlers.DimensionEntity]
		}
	}
	if len(pending) != len(deletes) || len(deletes) != n/2 {
		t.Fatalf("%d pending rows, %d delete calls, want %d", len(pending), len(deletes), n/2)
	}
	for _, p := range pending {
		if _, ok := deletes[p.CallID]; !ok {
			t.Errorf("pending row for %s, which has no final delete row", p.CallID)
		}
	}

	// The audit table agrees: every call has exactly its one row, complete
	// (no delete left pending), naming the same entity; none fell back.
	if fb := a.fallback.String(); fb != "" {
		t.Errorf("audit rows fell back to the log:\n%s", fb)
	}
	stored := a.auditRows(t)
	if len(stored) != len(rows) {
		t.Errorf("audit table holds %d rows for %d calls", len(stored), len(rows))
	}
	for id, want := range rows {
		got, ok := stored[id]
		switch {
		case !ok:
			t.Errorf("call %s (%s) has no audit row", id, want.Tool)
		case got.Status != audit.StatusDone:
			t.Errorf("call %s (%s) audit row is %q", id, got.Tool, got.Status)
		case got.Tool != want.Tool || got.OK != want.OK || got.Dimensions[handlers.DimensionEntity] != want.Dimensions[handlers.DimensionEntity]:
			t.Errorf("call %s: stored row %s ok=%v entity=%s, adapter's %s ok=%v entity=%s", id,
				got.Tool, got.OK, got.Dimensions[handlers.DimensionEntity], want.Tool, want.OK, want.Dimensions[handlers.DimensionEntity])
		case got.Tool == handlers.ToolDelete && !got.Destructive:
			t.Errorf("delete call %s not marked destructive", id)
		}
	}
}

// createMany posts n broadcasts to channel through broadcast_create with
// workers concurrent callers and returns their ids in creation order of
// index.
func createMany(t *testing.T, a *app, channel string, n, workers int) []string {
	t.Helper()
	ids := make([]string, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				r := a.call(t, handlers.ToolCreate, map[string]any{"channel": channel, "text": fmt.Sprintf("message %d", i)}, reader)
				if r.IsError {
					t.Errorf("create %d: %s %s", i, r.Code(), r.Err.Message)
					continue
				}
				ids[i] = mcpfntest.Output[handlers.CreateOutput](t, r).ID
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}
