package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

// post creates n broadcasts in channel, oldest first, and returns their
// texts newest first (the order a digest quotes them in).
func (a *app) post(t *testing.T, channel string, texts ...string) []string {
	t.Helper()
	for _, text := range texts {
		mcpfntest.Output[handlers.CreateOutput](t, a.call(t, handlers.ToolCreate, map[string]any{"channel": channel, "text": text}, anonymous))
	}
	newest := slices.Clone(texts)
	slices.Reverse(newest)
	return newest
}

func TestDigestSummarisesTheWholeChannelPageByPage(t *testing.T) {
	a := newApp(t)
	newest := a.post(t, "general",
		"deploy finished", "deploy failed", "rollback started", "deploy finished again",
		"lunch break", "deploy of the digest", "quiet evening")
	a.post(t, "random", "deploy deploy deploy deploy") // another channel: not counted

	got := mcpfntest.Output[handlers.DigestOutput](t, a.call(t, handlers.ToolDigest, map[string]any{"channel": "general", "pageSize": 3}, anonymous))
	if got.Channel != "general" || got.Broadcasts != 7 || got.Pages != 3 {
		t.Fatalf("digest of 7 broadcasts in pages of 3: %+v", got)
	}
	if !slices.Equal(got.Latest, newest[:5]) {
		t.Errorf("latest %q, want the five newest %q", got.Latest, newest[:5])
	}
	if len(got.TopWords) == 0 || got.TopWords[0] != (handlers.WordCount{Word: "deploy", Count: 4}) {
		t.Errorf("top words %+v, want deploy×4 first", got.TopWords)
	}
	if got.Oldest == "" || got.Newest == "" || got.Oldest >= got.Newest {
		t.Errorf("oldest %q, newest %q", got.Oldest, got.Newest)
	}
	if want := fmt.Sprintf("#general has 7 broadcasts, from %s to %s.", got.Oldest, got.Newest); got.Summary != want {
		t.Errorf("summary %q, want %q", got.Summary, want)
	}
}

func TestDigestOfAnEmptyChannelReadsOnePage(t *testing.T) {
	a := newApp(t)
	got := mcpfntest.Output[handlers.DigestOutput](t, a.call(t, handlers.ToolDigest, map[string]any{"channel": "empty"}, anonymous))
	if got.Broadcasts != 0 || got.Pages != 1 || got.Summary != "#empty has no broadcasts." || got.Latest == nil || got.TopWords == nil {
		t.Fatalf("empty digest: %+v", got)
	}
}

func TestDigestIsATaskOptionalReadOnlyTool(t *testing.T) {
	for _, tool := range handlers.Catalog() {
		if tool.Name() != handlers.ToolDigest {
			continue
		}
		if tool.TaskSupport() != adapter.TaskOptional {
			t.Errorf("TaskSupport %q, want optional", tool.TaskSupport())
		}
		return
	}
	t.Fatalf("%s is not in the catalog", handlers.ToolDigest)
}

func TestDigestReportsProgressPerPageBeforeItsResult(t *testing.T) {
	a := newApp(t)
	a.post(t, "general", "one", "two", "three", "four", "five")

	var pages []float64
	var messages []string
	res := a.call(t, handlers.ToolDigest, map[string]any{"channel": "general", "pageSize": 2}, anonymous, mcpfntest.OnProgress(func(p mcpfntest.Progress) {
		if p.Total != 0 {
			t.Errorf("progress %+v, want an unknown total", p)
		}
		pages = append(pages, p.Progress)
		messages = append(messages, p.Message)
	}))
	got := mcpfntest.Output[handlers.DigestOutput](t, res)
	if got.Pages != 3 || !slices.Equal(pages, []float64{1, 2, 3}) {
		t.Fatalf("progress %v for a digest of %d pages, want one report per page", pages, got.Pages)
	}
	if messages[2] != "page 3 read, 5 broadcasts so far" {
		t.Errorf("last progress message %q", messages[2])
	}
}

func TestDigestStopsBetweenPagesWhenCancelled(t *testing.T) {
	t.Setenv(handlers.DigestPageDelayEnv, "1h") // only a cancel can end this call in time
	a := newApp(t)
	a.post(t, "general", "one", "two", "three")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var frames int
	res := a.call(t, handlers.ToolDigest, map[string]any{"channel": "general", "pageSize": 1}, anonymous, mcpfntest.Context(ctx), mcpfntest.OnProgress(func(mcpfntest.Progress) {
		frames++
		cancel() // after the first page, during the pause
	}))
	if !res.IsError || res.Code() == "" {
		t.Fatalf("a cancelled digest answered %+v, want an error result", res)
	}
	if frames != 1 {
		t.Errorf("%d pages reported, want the one read before the cancel", frames)
	}
}

func TestDigestRefusesAPageDelayThatIsNotADuration(t *testing.T) {
	t.Setenv(handlers.DigestPageDelayEnv, "soon")
	a := newApp(t)
	wantCode(t, a.call(t, handlers.ToolDigest, map[string]any{"channel": "general"}, anonymous), adapter.CodeInternal)
}

// The digest's summary must stay a summary: never more than five texts
// however big the channel.
func TestDigestQuotesAtMostFiveTexts(t *testing.T) {
	a := newApp(t)
	var texts []string
	for i := range 12 {
		texts = append(texts, fmt.Sprintf("broadcast number %d", i))
	}
	a.post(t, "busy", texts...)
	got := mcpfntest.Output[handlers.DigestOutput](t, a.call(t, handlers.ToolDigest, map[string]any{"channel": "busy", "pageSize": 5}, anonymous))
	if got.Broadcasts != 12 || got.Pages != 3 || len(got.Latest) != 5 {
		t.Fatalf("%+v", got)
	}
	if b, _ := json.Marshal(got.TopWords); len(got.TopWords) > 5 {
		t.Fatalf("top words %s, want at most five", b)
	}
}
