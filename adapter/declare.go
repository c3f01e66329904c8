package adapter

import (
	"context"
	"fmt"
	"os"
)

// BoundHandlerFunc is a handler that needs a dependency of type D — a
// store, a table client — built once per function at start. A method
// expression of the dependency's type fits: (*Store).create is a
// BoundHandlerFunc[*Store, CreateInput, CreateOutput].
type BoundHandlerFunc[D, In, Out any] func(dep D, ctx context.Context, call *Call, in In) (Out, error)

// Declared is a tool declared once and bound per function: its definition is
// fixed at package initialisation, and its function's main gives it its
// dependency with [Serve]. Tests bind it to their own dependency with
// [Declared.Bind]. It is immutable and safe to share.
type Declared[D any] struct {
	tool *Tool
	bind func(dep D) *Tool
}

// Declare checks d and returns it declared with handler h, to be bound to a
// dependency later. It panics on an invalid definition, like [MustDefine]:
// declarations are package-level variables, and a broken one must stop
// every binary and test that links it.
//
//	var NoteAdd = adapter.Declare(adapter.ToolDef[AddInput, AddOutput]{
//		Name: "note_add", Scopes: []string{"notes:write"},
//		Tables: []adapter.TableAccess{{Table: "NotesTable", Env: "NOTES_TABLE", Actions: []string{"PutItem"}}},
//	}, (*Notes).add)
//
//	func main() { adapter.Serve(notes.NoteAdd, notes.FromEnv) }
func Declare[D, In, Out any](d ToolDef[In, Out], h BoundHandlerFunc[D, In, Out]) *Declared[D] {
	if h == nil {
		panic(fmt.Sprintf("adapter: Declare(%q) without a handler", d.Name))
	}
	d.Handler = func(context.Context, *Call, In) (Out, error) {
		var zero Out
		return zero, errNoHandler
	}
	t, err := define(d)
	if err != nil {
		panic(err)
	}
	return &Declared[D]{tool: t, bind: func(dep D) *Tool {
		bound := *t
		bound.bind = binder(func(ctx context.Context, call *Call, in In) (Out, error) { return h(dep, ctx, call, in) })
		return &bound
	}}
}

// Name is the tool's name.
func (d *Declared[D]) Name() string { return d.tool.name }

// Tool is the tool as a catalog lists it, unbound: a call that reaches it
// fails with INTERNAL_SERVER_ERROR.
func (d *Declared[D]) Tool() *Tool { return d.tool }

// Bind returns the tool with its handler bound to dep, ready for [New] or
// [Start]. Binding shares the declaration's checked schemas.
func (d *Declared[D]) Bind(dep D) *Tool { return d.bind(dep) }

// Serve is a function's whole main for a declared tool: it builds the
// dependency with newDep and serves the bound tool with [Start]. When `mcpfn
// template` asks the function for its declaration (see [Start]), Serve
// answers without calling newDep, so a declaration never needs the
// environment a deployed function has. An error from newDep stops the
// function at init, which Lambda reports before the first call.
func Serve[D any](d *Declared[D], newDep func(context.Context) (D, error), opts ...Option) {
	if describing() {
		describe(d.tool)
	}
	// The start's network waits first: newDep (often clients of its own)
	// overlaps them.
	b := beginBoot()
	dep, err := newDep(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpfn: tool %s: %v\n", d.tool.name, err)
		os.Exit(1)
	}
	b.finish(d.Bind(dep), opts...)
}
