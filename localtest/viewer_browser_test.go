package localtest_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
)

// envScreenshotsTo names a directory the browser test copies one
// screenshot of each viewer page to (docs/img when refreshing the docs).
const envScreenshotsTo = "MCPFN_VIEWER_SCREENSHOTS_TO"

// hostileText would retitle the page if the viewer let it run.
const hostileText = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`

// chromium finds a Chromium binary. None: the test skips, except with
// CI=true, where a missing browser is a broken runner.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary on PATH and CI=true: install it (`make deps` as root does: apt-get install chromium)")
	}
	t.Skip("skipping the browser test: no chromium binary on PATH (`apt-get install chromium`, or `make deps` as root)")
	return ""
}

// browser is chromedp's options for a headless Chromium at bin, with extra.
// Chromium is given a temporary directory of its own, removed after the
// test: it keeps an org.chromium.Chromium.* directory in $TMPDIR while it
// runs, which the kill at the test's end left in /tmp every run. The
// removal is best effort: a renderer still exiting must not fail the test.
func browser(t *testing.T, bin string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	t.Helper()
	tmp, err := os.MkdirTemp("", "mcpfn-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Env("TMPDIR="+tmp))
	return append(opts, extra...)
}

// TestViewerInABrowser runs a 50-worker round of calls through the gateway
// and looks at them in the audit viewer with headless Chromium: every call
// is listed with its tool and caller, the filter form narrows the list, a
// trace page shows gateway → forward → tool in order, and an argument
// preview holding <script> stays text. Screenshots of each page go to the
// test's artifact directory (go test -artifacts keeps them).
func TestViewerInABrowser(t *testing.T) {
	bin := chromium(t)
	if stack.ViewerURL() == "" {
		t.Fatal("the stack serves no viewer")
	}
	const workers, gets = 50, 10
	subject := unique("e2e-viewer")
	cs := connect(t, subject)
	channel := unique("viewer")
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			params := &mcp.CallToolParams{Name: "broadcast_create", Arguments: map[string]any{"channel": channel, "text": fmt.Sprintf("viewer %d", i)}}
			switch {
			case i == 0:
				params.Arguments = map[string]any{"channel": channel, "text": hostileText}
			case i <= gets:
				// Not found: the round has failures to filter on.
				params = &mcp.CallToolParams{Name: "broadcast_get", Arguments: map[string]any{"id": "AAAAAAAAAAAAAAAAAAAAAAAAA" + string(rune('A'+i))}}
			}
			res, err := cs.CallTool(t.Context(), params)
			switch {
			case err != nil:
				errs <- err
			case res.IsError != (i >= 1 && i <= gets):
				errs <- fmt.Errorf("call %d (%s): isError=%v: %s", i, params.Name, res.IsError, text(res))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rows, err := auditor().CallerRows(t.Context(), localCaller(subject), audit.QueryOptions{})
	if err != nil || len(rows) != workers {
		t.Fatalf("%d rows of %s (%v), want %d", len(rows), subject, err, workers)
	}
	var hostile, created audit.Row
	for _, r := range rows {
		if strings.Contains(r.ArgsPreview, "document.title") {
			hostile = r
		} else if r.Tool == "broadcast_create" {
			created = r
		}
	}
	if hostile.CallID == "" || created.CallID == "" {
		t.Fatalf("no hostile or plain create row among %d", len(rows))
	}
	checkSpans(t, []audit.Row{created}) // its segments have reached xray.jsonl

	actx, cancel := chromedp.NewExecAllocator(t.Context(), browser(t, bin, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	shots := t.ArtifactDir()
	t.Logf("screenshots in %s", shots)
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err == nil {
			err = os.WriteFile(filepath.Join(shots, name), png, 0o644)
		}
		if dir := os.Getenv(envScreenshotsTo); dir != "" && err == nil {
			err = os.WriteFile(filepath.Join(dir, name), png, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	type listedRow struct{ Call, Tool, Caller string }
	collect := func() []listedRow {
		t.Helper()
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]listedRow](`Array.from(document.querySelectorAll("tr.call")).map(r => ({
			Call: r.dataset.call, Tool: r.querySelector("td.tool").textContent.trim(), Caller: r.querySelector("td.caller").textContent.trim()}))`))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}

	// Every call of the round, with tool and caller.
	base := strings.TrimSuffix(stack.ViewerURL(), "/")
	do(chromedp.Navigate(base+"/?"+url.Values{"caller": {subject}, "limit": {"500"}}.Encode()), chromedp.WaitVisible("#calls"))
	listed := collect()
	shoot("viewer-calls.png")
	want := map[string]string{}
	for _, r := range rows {
		want[r.CallID] = r.Tool
	}
	if len(listed) != workers {
		t.Errorf("the calls page lists %d calls of %s, want %d", len(listed), subject, workers)
	}
	for _, l := range listed {
		if want[l.Call] == "" || l.Tool != want[l.Call] || l.Caller != subject {
			t.Errorf("listed %+v, want tool %q and caller %s", l, want[l.Call], subject)
		}
		delete(want, l.Call)
	}
	if len(want) > 0 {
		t.Errorf("calls not listed: %v", want)
	}

	// The filter form: the failed gets only, then the creates only.
	for _, f := range []struct {
		tool, outcome, wantTool string
		n                       int
	}{
		{"", "NOT_FOUND", "broadcast_get", gets},
		{"broadcast_create", "ok", "broadcast_create", workers - gets},
	} {
		// Type into the form of a fresh page (its fields are empty) and
		// submit it, as a person would.
		steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(base + "/"), chromedp.WaitVisible("#filters")}
		for name, v := range map[string]string{"caller": subject, "tool": f.tool, "outcome": f.outcome} {
			if v != "" {
				steps = append(steps, chromedp.SendKeys(`#filters input[name="`+name+`"]`, v))
			}
		}
		do(append(steps, chromedp.Click(`#filters button[type="submit"]`))...)
		// The answer's form shows the filters it applied.
		do(chromedp.WaitVisible(`#filters[data-applied="` + f.tool + `|` + f.outcome + `"]`))
		listed := collect()
		if len(listed) != f.n || slices.ContainsFunc(listed, func(l listedRow) bool { return l.Tool != f.wantTool || l.Caller != subject }) {
			t.Errorf("filter tool=%q outcome=%s: %d rows %+v, want %d of %s", f.tool, f.outcome, len(listed), listed, f.n, f.wantTool)
		}
	}

	// A trace: the gateway's segment, its forward subsegment, the tool's
	// row joined with its subsegment, nested in that order.
	type span struct{ Depth, Name, Kind string }
	do(chromedp.Navigate(base+"/trace/"+url.PathEscape(created.TraceID)), chromedp.WaitVisible("#trace"))
	spans, err := chromedp.Run(ctx, chromedp.Evaluate[[]span](`Array.from(document.querySelectorAll("tr.span")).map(r => ({Depth: r.dataset.depth, Name: r.dataset.name, Kind: r.dataset.kind}))`))
	if err != nil {
		t.Fatal(err)
	}
	shoot("viewer-trace.png")
	wantSpans := []span{{"0", "GatewayFunction", "function segment"}, {"1", "BroadcastCreateFunction", "forward (lambda:Invoke)"}, {"2", "broadcast_create", "tool call (row + subsegment)"}}
	if !slices.Equal(spans, wantSpans) {
		t.Errorf("trace %s shows %+v, want %+v", created.TraceID, spans, wantSpans)
	}

	// The hostile call: its preview is text, nothing ran.
	do(chromedp.Navigate(base+"/call/"+url.PathEscape(audit.WriterOf(&hostile))+"/"+url.PathEscape(hostile.CallID)), chromedp.WaitVisible("#f-args"))
	preview, err := chromedp.Run(ctx, chromedp.TextContent("#f-args"))
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("script, main img").length`))
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	shoot("viewer-call.png")
	if !strings.Contains(preview, strings.ReplaceAll(hostileText, `"`, `\"`)) {
		t.Errorf("the preview does not show the arguments as text: %q", preview)
	}
	if scripts != 0 || title == "pwned" || !strings.HasPrefix(title, "Call ") {
		t.Errorf("the hostile preview is live: %d script/img elements, title %q", scripts, title)
	}
}

// TestViewerRefusesOtherSitesInABrowser (issue 20, L3): a page elsewhere
// makes the operator's headless Chromium ask the viewer for listings — an
// <img src>, a no-cors fetch, a link the user follows — first from another
// site (hostile.test), then from another port of the viewer's own host
// (same-site: a local dev server). Chromium marks each with its
// Sec-Fetch-Site and the viewer answers every one 403, before any Scan.
// The viewer's own browsing still works: an address typed (none), its
// style sheet and its own form (same-origin) are served.
func TestViewerRefusesOtherSitesInABrowser(t *testing.T) {
	bin := chromium(t)
	if stack.ViewerURL() == "" {
		t.Fatal("the stack serves no viewer")
	}
	base := strings.TrimSuffix(stack.ViewerURL(), "/")
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		round := r.URL.Query().Get("round")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>elsewhere</title>
<img src="%[1]s/?since=1000000h&tool=%[2]s-img">
<a id="go" href="%[1]s/?since=1000000h&tool=%[2]s-link">the audit</a>
<script>window.fetched = fetch("%[1]s/?since=1000000h&tool=%[2]s-fetch", {mode: "no-cors"}).then(() => "", e => String(e));</script>`,
			base, url.QueryEscape(round))
	}))
	defer hostile.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(hostile.URL, "http://"))

	// hostile.test resolves to loopback, so no rule for public pages
	// reaching private addresses gets in the way: what stops the requests
	// is the viewer's answer.
	actx, cancel := chromedp.NewExecAllocator(t.Context(), browser(t, bin, chromedp.Flag("host-resolver-rules", "MAP hostile.test 127.0.0.1"))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	seen := newViewerRequests(base)
	if err := chromedp.Listen(ctx, seen.observe); err != nil {
		t.Fatal(err)
	}
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}

	for _, r := range []struct{ round, page, site string }{
		{"cross", "http://hostile.test:" + port, "cross-site"},
		{"port", "http://127.0.0.1:" + port, "same-site"},
	} {
		marks := []string{r.round + "-img", r.round + "-fetch", r.round + "-link"}
		done := seen.expect(marks...)
		do(chromedp.Navigate(r.page + "/?round=" + r.round))
		if msg, err := chromedp.Run(ctx, chromedp.Evaluate[string]("window.fetched", chromedp.EvalAwaitPromise)); err != nil || msg != "" {
			t.Fatalf("%s: the page's fetch: %q, %v", r.round, msg, err)
		}
		// A person following the page's link; the next round's Navigate
		// must not start while that navigation is in flight, or it can take
		// the link's load event for its own and leave the old page.
		followed := documentLoaded(t, ctx)
		do(chromedp.Click("#go"))
		select {
		case <-followed:
		case <-ctx.Done():
			t.Fatalf("%s: the page the link opened never loaded", r.round)
		}
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("%s: the browser's requests to the viewer did not all complete: %s", r.round, seen)
		}
		for _, m := range marks {
			if got := seen.get(m); got.site != r.site || got.status != http.StatusForbidden {
				t.Errorf("%s: the viewer answered %d to a request with Sec-Fetch-Site %q, want %s answered 403", m, got.status, got.site, r.site)
			}
		}
	}

	// Same-origin browsing: the address typed, its style sheet, its own
	// filter form submitted.
	done := seen.expect("style.css", "own-form")
	do(chromedp.Navigate(base+"/?since=1000000h"), chromedp.WaitVisible("#filters"),
		chromedp.SendKeys(`#filters input[name="tool"]`, "own-form"), chromedp.Click(`#filters button[type="submit"]`),
		chromedp.WaitVisible(`#filters[data-applied="own-form|"]`))
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("same-origin: the browser's requests did not all complete: %s", seen)
	}
	for _, m := range []string{"style.css", "own-form"} {
		if got := seen.get(m); got.site != "same-origin" || got.status != http.StatusOK {
			t.Errorf("%s: the viewer answered %d with Sec-Fetch-Site %q, want same-origin answered 200", m, got.status, got.site)
		}
	}
}

// documentLoaded returns a channel closed once the tab of ctx has navigated
// its main frame to a new document and that document has loaded (its load
// event). Call it before the action that navigates.
func documentLoaded(t *testing.T, ctx context.Context) <-chan struct{} {
	t.Helper()
	loaded := make(chan struct{})
	lctx, cancel := context.WithCancel(ctx)
	navigated, closed := false, false // only the tab's reader goroutine calls the func
	if err := chromedp.Listen(lctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventFrameNavigated:
			navigated = navigated || ev.Frame.ParentID == ""
		case *page.EventLoadEventFired:
			if navigated && !closed {
				closed = true
				close(loaded)
				cancel()
			}
		}
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	return loaded
}

// viewerRequests records, from the browser's network events, the
// Sec-Fetch-Site each request to the viewer carried and the status the
// viewer answered (the raw one: Chromium may block a cross-site answer's
// body from the page, ERR_BLOCKED_BY_ORB, after it arrived).
type viewerRequests struct {
	base string
	mu   sync.Mutex
	reqs map[network.RequestID]*viewerRequest
	want []string
	done chan struct{}
}

type viewerRequest struct {
	url, site string
	status    int
}

func newViewerRequests(base string) *viewerRequests {
	return &viewerRequests{base: base, reqs: map[network.RequestID]*viewerRequest{}}
}

// expect returns a channel closed once a request to the viewer whose URL
// contains each mark has both its Sec-Fetch-Site and its status.
func (v *viewerRequests) expect(marks ...string) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.want, v.done = marks, make(chan struct{})
	v.check()
	return v.done
}

// observe runs in the tab's event loop: it returns at once.
func (v *viewerRequests) observe(ev any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	req := func(id network.RequestID) *viewerRequest {
		if v.reqs[id] == nil {
			v.reqs[id] = &viewerRequest{}
		}
		return v.reqs[id]
	}
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		req(ev.RequestID).url = ev.Request.URL
	case *network.EventRequestWillBeSentExtraInfo:
		if s, ok := ev.Headers["Sec-Fetch-Site"].(string); ok {
			req(ev.RequestID).site = s
		}
	case *network.EventResponseReceivedExtraInfo:
		req(ev.RequestID).status = int(ev.StatusCode)
	default:
		return
	}
	v.check()
}

func (v *viewerRequests) check() {
	if v.done == nil {
		return
	}
	for _, m := range v.want {
		if r := v.find(m); r == nil || r.site == "" || r.status == 0 {
			return
		}
	}
	close(v.done)
	v.done = nil
}

func (v *viewerRequests) find(mark string) *viewerRequest {
	for _, r := range v.reqs {
		if strings.HasPrefix(r.url, v.base+"/") && strings.Contains(r.url, mark) {
			return r
		}
	}
	return nil
}

func (v *viewerRequests) get(mark string) viewerRequest {
	v.mu.Lock()
	defer v.mu.Unlock()
	if r := v.find(mark); r != nil {
		return *r
	}
	return viewerRequest{}
}

func (v *viewerRequests) String() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var b strings.Builder
	for _, r := range v.reqs {
		fmt.Fprintf(&b, "\n  %s Sec-Fetch-Site=%q status=%d", r.url, r.site, r.status)
	}
	return b.String()
}
