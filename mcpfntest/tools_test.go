package mcpfntest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// The tests' own tools: a notebook kept in memory, declared as a project
// declares its tools and bound to a fresh notebook per test.

const scopeWrite = "notes:write"

// notebook is the tools' dependency.
type notebook struct {
	mu    sync.Mutex
	notes map[string]string
	seq   int
	// deletes counts the runs of note_delete's handler.
	deletes atomic.Int32
	// release, when set, is what note_delete waits for before it deletes,
	// ignoring its context.
	release chan struct{}
}

func newNotebook() *notebook { return &notebook{notes: map[string]string{}} }

type addIn struct {
	Text string `json:"text" jsonschema:"the note"`
}

type addOut struct {
	ID string `json:"id"`
}

var noteAdd = adapter.Declare(adapter.ToolDef[addIn, addOut]{
	Name:        "note_add",
	Description: "Adds a note.",
	Scopes:      []string{scopeWrite},
	RefineInput: adapter.Refine{"text": func(p *jsonschema.Schema) { p.MinLength = jsonschema.Ptr(1) }},
}, (*notebook).add)

func (nb *notebook) add(_ context.Context, call *adapter.Call, in addIn) (addOut, error) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	nb.seq++
	id := "n" + strconv.Itoa(nb.seq)
	nb.notes[id] = in.Text
	call.SetDimension("entityId", id)
	return addOut{ID: id}, nil
}

type idIn struct {
	ID string `json:"id"`
}

type deleteOut struct {
	Text string `json:"text"`
}

var noteDelete = adapter.Declare(adapter.ToolDef[idIn, deleteOut]{
	Name:        "note_delete",
	Description: "Deletes a note.",
	Destructive: true,
	Scopes:      []string{scopeWrite},
}, (*notebook).delete)

func (nb *notebook) delete(_ context.Context, call *adapter.Call, in idIn) (deleteOut, error) {
	nb.deletes.Add(1)
	call.SetDimension("entityId", in.ID)
	if nb.release != nil {
		<-nb.release
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	text, ok := nb.notes[in.ID]
	if !ok {
		return deleteOut{}, adapter.NewError(adapter.CodeNotFound, "no such note")
	}
	delete(nb.notes, in.ID)
	return deleteOut{Text: text}, nil
}

// echo answers with what it was given and what it knows of its call.
type echoOut struct {
	Text    string `json:"text"`
	Tenant  string `json:"tenant,omitempty"`
	Session string `json:"session,omitempty"`
}

var echo = adapter.MustDefine(adapter.ToolDef[addIn, echoOut]{
	Name: "echo",
	Handler: func(_ context.Context, call *adapter.Call, in addIn) (echoOut, error) {
		call.SetDimension("entityId", in.Text)
		return echoOut{Text: in.Text, Tenant: call.Tenant(), Session: call.SessionID}, nil
	},
})

// boom panics with a message that must reach only the audit.
const boomMessage = "dial tcp 10.0.0.7:5432: password authentication failed for user app"

var boom = adapter.MustDefine(adapter.ToolDef[struct{}, echoOut]{
	Name: "boom",
	Handler: func(context.Context, *adapter.Call, struct{}) (echoOut, error) {
		panic(boomMessage)
	},
})

// countTo reports its progress at every step.
type countIn struct {
	To int `json:"to"`
}

type countOut struct {
	Counted int `json:"counted"`
}

var countTo = adapter.MustDefine(adapter.ToolDef[countIn, countOut]{
	Name: "count_to",
	Handler: func(ctx context.Context, call *adapter.Call, in countIn) (countOut, error) {
		for i := 1; i <= in.To; i++ {
			if err := ctx.Err(); err != nil {
				return countOut{}, err
			}
			call.Progress(float64(i), float64(in.To), fmt.Sprintf("step %d", i))
		}
		return countOut{Counted: in.To}, nil
	},
})

// waitForEnd runs until its context ends.
var waitForEnd = adapter.MustDefine(adapter.ToolDef[struct{}, countOut]{
	Name: "wait_for_end",
	Handler: func(ctx context.Context, _ *adapter.Call, _ struct{}) (countOut, error) {
		<-ctx.Done()
		return countOut{}, ctx.Err()
	},
})

// greeter asks for the user's name, then for a confirmation: a call of
// three rounds. What it learnt travels in its request state.
type greetOut struct {
	Greeting string `json:"greeting"`
}

var greeter = adapter.MustDefine(adapter.ToolDef[struct{}, greetOut]{
	Name: "greeter",
	Handler: func(_ context.Context, call *adapter.Call, _ struct{}) (greetOut, error) {
		answers := call.InputResponses()
		switch {
		case call.RequestState() == "":
			return greetOut{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"name": {Method: "elicitation/create", Params: map[string]any{
					"message":         "What is your name?",
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
				}},
			}, "asked name")
		case call.RequestState() == "asked name":
			var r struct {
				Content struct {
					Name string `json:"name"`
				} `json:"content"`
			}
			if err := json.Unmarshal(answers["name"], &r); err != nil || r.Content.Name == "" {
				return greetOut{}, adapter.NewError(adapter.CodeValidation, "no name given")
			}
			return greetOut{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"confirm": {Method: "elicitation/create", Params: map[string]any{"message": "Greet " + r.Content.Name + "?"}},
			}, "name="+r.Content.Name)
		default:
			var r struct {
				Action string `json:"action"`
			}
			if err := json.Unmarshal(answers["confirm"], &r); err != nil || r.Action != "accept" {
				return greetOut{}, adapter.NewError(adapter.CodeConflict, "the user declined")
			}
			return greetOut{Greeting: "Hello, " + call.RequestState()[len("name="):]}, nil
		}
	},
})
