package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// ToolDigest is the long-running demo tool: it reads a whole channel, page
// by page, reporting progress per page, and may run as a task.
const ToolDigest = "broadcast_digest"

// DigestPageDelayEnv names the environment variable holding a pause taken
// after each page (a Go duration, e.g. "2s"; default none). It exists for
// the demo and the tests: a real channel is slow because it is big, a demo
// channel is not, and a long pause lets a client watch progress, poll a
// task and cancel it.
const DigestPageDelayEnv = "MCPFN_DIGEST_PAGE_DELAY"

// Digest limits.
const (
	defaultDigestPageSize = 25
	digestLatest          = 5 // texts quoted in a digest
	digestTopWords        = 5
	digestMinWordLen      = 4 // shorter words are mostly "the", "and", …
)

// DigestInput is broadcast_digest's input.
type DigestInput struct {
	Channel  string `json:"channel" jsonschema:"the channel to summarise"`
	PageSize int    `json:"pageSize,omitempty" jsonschema:"how many broadcasts to read per page (default 25); each page is one progress report"`
}

// DigestOutput is broadcast_digest's output: a summary of the whole channel.
type DigestOutput struct {
	Channel    string      `json:"channel" jsonschema:"the channel summarised"`
	Broadcasts int         `json:"broadcasts" jsonschema:"how many broadcasts the channel holds"`
	Pages      int         `json:"pages" jsonschema:"how many pages were read"`
	Oldest     string      `json:"oldest,omitempty" jsonschema:"when the oldest broadcast was posted (RFC 3339, UTC)"`
	Newest     string      `json:"newest,omitempty" jsonschema:"when the newest broadcast was posted (RFC 3339, UTC)"`
	TopWords   []WordCount `json:"topWords" jsonschema:"the most frequent words of four letters or more, most frequent first"`
	Latest     []string    `json:"latest" jsonschema:"the texts of the newest broadcasts, newest first"`
	Summary    string      `json:"summary" jsonschema:"the digest in one sentence"`
}

// WordCount is one of a digest's top words.
type WordCount struct {
	Word  string `json:"word" jsonschema:"the word, lower-cased"`
	Count int    `json:"count" jsonschema:"how often it occurs in the channel"`
}

// Digest is broadcast_digest, the long-running demo: it pages through the
// byChannel index as broadcast_list does, for up to 15 minutes.
var Digest = adapter.Declare(adapter.ToolDef[DigestInput, DigestOutput]{
	Name:  ToolDigest,
	Title: "Summarise a channel",
	Description: "Reads every broadcast of a channel, a page at a time, and returns a digest: " +
		"how many, from when to when, the most frequent words and the newest texts. " +
		"A big channel takes a while: the tool reports progress per page and can run as a task " +
		"(poll it with tasks/get, stop it with tasks/cancel).",
	ReadOnly:    true,
	Idempotent:  true,
	TaskSupport: adapter.TaskOptional,
	RefineInput: adapter.Refine{
		"channel": channelSchema,
		"pageSize": func(p *jsonschema.Schema) {
			p.Minimum, p.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(maxListLimit))
			p.Default = json.RawMessage(fmt.Sprint(defaultDigestPageSize))
		},
	},
	Tables:  broadcastsTable("byChannel", "Query"),
	Timeout: 15 * time.Minute,
}, (*Store).digest)

func (store *Store) digest(ctx context.Context, call *adapter.Call, in DigestInput) (DigestOutput, error) {
	call.SetDimension(DimensionEntity, in.Channel)
	delay, err := digestPageDelay()
	if err != nil {
		return DigestOutput{}, err
	}
	size := in.PageSize
	if size == 0 {
		size = defaultDigestPageSize
	}
	d := newDigester(in.Channel)
	cursor := ""
	for {
		page, err := store.List(ctx, in.Channel, size, cursor)
		if err != nil {
			return DigestOutput{}, toolError(err)
		}
		d.add(page.Items)
		// The total is unknown until the last page: report pages read.
		call.Progress(float64(d.out.Pages), 0, fmt.Sprintf("page %d read, %d broadcasts so far", d.out.Pages, d.out.Broadcasts))
		if page.NextCursor == "" {
			return d.result(), nil
		}
		cursor = page.NextCursor
		if err := wait(ctx, delay); err != nil {
			return DigestOutput{}, err
		}
	}
}

// digestPageDelay reads DigestPageDelayEnv.
func digestPageDelay() (time.Duration, error) {
	v := os.Getenv(DigestPageDelayEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("handlers: %s=%q is not a non-negative Go duration", DigestPageDelayEnv, v)
	}
	return d, nil
}

// wait pauses d, or returns ctx's error as soon as ctx ends: a cancelled
// digest stops between pages, not after the whole channel.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// digester accumulates a digest over the pages of one channel, newest
// first.
type digester struct {
	out   DigestOutput
	words map[string]int
}

func newDigester(channel string) *digester {
	return &digester{out: DigestOutput{Channel: channel, TopWords: []WordCount{}, Latest: []string{}}, words: map[string]int{}}
}

func (d *digester) add(items []Broadcast) {
	d.out.Pages++
	for _, b := range items {
		d.out.Broadcasts++
		if d.out.Newest == "" {
			d.out.Newest = b.CreatedAt
		}
		d.out.Oldest = b.CreatedAt
		if len(d.out.Latest) < digestLatest {
			d.out.Latest = append(d.out.Latest, b.Text)
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(b.Text), notWordRune) {
			if len([]rune(w)) >= digestMinWordLen {
				d.words[w]++
			}
		}
	}
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

func (d *digester) result() DigestOutput {
	out := d.out
	for w, n := range d.words {
		out.TopWords = append(out.TopWords, WordCount{Word: w, Count: n})
	}
	sort.Slice(out.TopWords, func(i, j int) bool {
		a, b := out.TopWords[i], out.TopWords[j]
		return a.Count > b.Count || a.Count == b.Count && a.Word < b.Word
	})
	out.TopWords = out.TopWords[:min(len(out.TopWords), digestTopWords)]
	switch out.Broadcasts {
	case 0:
		out.Summary = fmt.Sprintf("#%s has no broadcasts.", out.Channel)
	default:
		out.Summary = fmt.Sprintf("#%s has %d broadcasts, from %s to %s.", out.Channel, out.Broadcasts, out.Oldest, out.Newest)
	}
	return out
}
