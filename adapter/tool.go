package adapter

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/audit"
)

// HandlerFunc is a tool's business logic: typed input in, typed output or an
// error out. It runs with the call's context (cancelled reserve before the
// Lambda deadline) and the call's facts; it needs nothing of Lambda, MCP or
// audit. Return an *Error for failures the caller should see; any other error
// reaches the caller as INTERNAL_SERVER_ERROR.
type HandlerFunc[In, Out any] func(ctx context.Context, call *Call, in In) (Out, error)

// ToolDef is a tool's definition: what it is (name, description, annotations,
// scopes, schemas) and, once bound, how it runs (Handler). Its input and
// output schemas are inferred from In and Out with
// github.com/google/jsonschema-go (the library the MCP go-sdk uses), so the
// schema on tools/list and the one the function validates are the same value.
//
// As the go-sdk keeps *mcp.Tool apart from its handler, a tool whose handler
// needs something built at start (a table client, a store) is declared once
// with [Declare] and bound in its function's main with [Serve]; a tool that
// needs nothing is [Define]d with its Handler and served with [Start].
//
// The definition is also the source of the tool's deployment: `mcpfn
// template` asks each function for its definition ([Declaration]) and
// generates the function's resource, its least-privilege role (Tables,
// Buckets), its timeout and memory, its call key and the gateway's catalog
// from it.
type ToolDef[In, Out any] struct {
	Name        string // required; [a-zA-Z0-9_-]{1,64}
	Title       string
	Description string

	// MCP annotations. They are hints to the client; Destructive also makes
	// the audit write a pending row before the handler runs.
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool

	// Scopes the verified caller must hold. A tool with scopes fails closed:
	// no verified identity → UNAUTHORIZED, missing scope → FORBIDDEN.
	Scopes []string

	// Credentials the tool needs; each is resolved before the handler runs
	// and found with [Call.Credential].
	Credentials []CredentialNeed

	// InputSchema / OutputSchema replace the inferred schemas (rarely
	// needed: prefer jsonschema struct tags, tightened with RefineInput /
	// RefineOutput).
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema

	// RefineInput / RefineOutput tighten the schemas (inferred or given)
	// where a struct tag cannot: lengths, patterns, bounds, defaults. They
	// edit a fresh copy on every Define and Declare, never the definition.
	RefineInput  Refine
	RefineOutput Refine

	// TaskSupport says whether the tool runs as a task of the MCP Tasks
	// extension (default forbidden): a long-running tool is optional or
	// required.
	TaskSupport TaskSupport
	// TaskAfterInput: the tool gathers input synchronously (multi-round,
	// RequireInput) before it runs as a task. The gateway forwards its calls
	// synchronously, and the handler returns [StartTask] on the round that
	// becomes the task. Needs TaskSupport optional or required.
	TaskAfterInput bool

	// Tables are the DynamoDB tables (and indexes) the handler uses and
	// the actions it calls on each: the function's role is granted exactly
	// these, and its environment names each table (see [TableAccess]).
	Tables []TableAccess
	// Buckets are the S3 buckets the handler uses, the object actions it
	// calls on each and the key prefix they are confined to: the
	// function's role is granted exactly these, and its environment names
	// each bucket (see [BucketAccess]).
	Buckets []BucketAccess
	// Timeout is the function's timeout (whole seconds, 1 s to 15 min;
	// default 10 s). The call's context ends a reserve before it.
	Timeout time.Duration
	// MemoryMB is the function's memory (128 to 10240; default 256).
	MemoryMB int
	// MaxArgumentBytes is the largest arguments the tool takes, for a tool
	// that takes more than the gateway's request bound (MCPFN_MAX_BODY_BYTES,
	// 1 MiB) lets through: a file as base64, a document. The gateway then
	// accepts this tool's calls up to this size (plus the request's own
	// framing), at most [MaxArgumentBytesLimit], and hands arguments too
	// large for an invocation over as an object in the payloads bucket,
	// which the function reads before validation. It is also the function's
	// own limit on arguments (default [Limits].MaxArgumentBytes, 2 MiB).
	// Zero: the defaults, for every tool that takes ordinary arguments.
	MaxArgumentBytes int

	// Handler runs the tool. A definition declared for a catalog has none
	// yet; Define requires one.
	Handler HandlerFunc[In, Out]
}

// Refine maps a top-level property of a schema to a function that tightens
// that property's schema in place, for example
//
//	adapter.Refine{"channel": func(p *jsonschema.Schema) { p.MaxLength = jsonschema.Ptr(64) }}
//
// Define fails on a name the schema lacks, so a renamed field cannot silently
// shed its limits. Deeper changes take a whole schema in
// ToolDef.InputSchema / OutputSchema.
type Refine map[string]func(property *jsonschema.Schema)

// apply runs r on s's properties; what names the schema ("input",
// "output") in the error.
func (r Refine) apply(s *jsonschema.Schema, what string) error {
	if len(r) == 0 {
		return nil
	}
	if s == nil {
		return fmt.Errorf("%s refined, but the tool has no output schema (a Content tool has one only when OutputSchema gives it)", what)
	}
	for _, name := range slices.Sorted(maps.Keys(r)) {
		p, ok := s.Properties[name]
		if !ok || p == nil {
			return fmt.Errorf("%s schema has no property %q to refine", what, name)
		}
		if f := r[name]; f != nil {
			f(p)
		}
	}
	return nil
}

// Tool is a defined tool, ready for [New] or [Start] (or a declared one, for a
// catalog: see [Declare]). It is immutable and safe to share between
// concurrent calls.
type Tool struct {
	name, title, description        string
	readOnly, destructive, idem, ow bool
	scopes                          []string
	tasks                           TaskSupport
	taskAfterInput                  bool
	maxArgs                         int
	needs                           []CredentialNeed
	deploy                          deployNeeds // needs.go
	inSchema, outSchema             *jsonschema.Schema
	inResolved, outResolved         *jsonschema.Resolved
	inFast                          *fastSchema // nil: always jsonschema-go
	// outputTrusted: Out's schema was inferred and no type inside Out
	// marshals itself, so a value of type Out always matches it and step 7
	// can skip re-validating the handler's own typed output.
	outputTrusted bool
	outNils       *emptyNils // nil: no nil of Out is written empty
	// fwd: a forwarded tool (ForwardedTool), whose schemas are JSON: the
	// fields above that hold decoded schemas, or are built from them, and
	// bind are unset; schemas() builds the tool that has them.
	fwd *forwarded

	// bind decodes validated arguments into In and returns the handler call
	// for them. Decoding happens on the caller's goroutine: the handler's
	// goroutine starts with a small stack that a recursive decode would make
	// it grow and copy on every call.
	bind func(args json.RawMessage) (func(ctx context.Context, call *Call) (any, error), error)
}

// Define checks d, infers and refines its schemas, and binds its Handler: the
// result runs under [New] or [Start]. An Out of [Content] (or *Content) has no
// inferred output schema: Content describes blocks, not data.
func Define[In, Out any](d ToolDef[In, Out]) (*Tool, error) {
	if d.Handler == nil {
		return nil, fmt.Errorf("adapter: tool %q has no handler (a tool whose handler needs a dependency is declared with Declare and bound with Serve)", d.Name)
	}
	return define(d)
}

// MustDefine is Define for package-level tool variables; it panics on error.
func MustDefine[In, Out any](d ToolDef[In, Out]) *Tool {
	t, err := Define(d)
	if err != nil {
		panic(err)
	}
	return t
}

// checked is what Define checks of a definition besides its schemas and
// handler, shared with ForwardedTool.
type checked struct {
	tasks  TaskSupport
	deploy deployNeeds
}

// check checks the name, task support, argument limit and deployment needs
// of a definition.
func check(name string, ts TaskSupport, taskAfterInput bool, maxArgs int, tables []TableAccess, buckets []BucketAccess, timeout time.Duration, memoryMB int) (checked, error) {
	if !toolName.MatchString(name) {
		return checked{}, fmt.Errorf("adapter: tool name %q must match %s", name, toolName)
	}
	if name == audit.GatewayWriter {
		// Audit rows are keyed "<writer>#<callId>": a tool of this name
		// could write the gateway's rows (docs/audit.md).
		return checked{}, fmt.Errorf("adapter: tool name %q is reserved: the gateway's audit rows are keyed by it", name)
	}
	tasks, ok := ts.normal()
	if !ok {
		return checked{}, fmt.Errorf("adapter: tool %q: TaskSupport %q is not forbidden, optional or required", name, ts)
	}
	if taskAfterInput && tasks == TaskForbidden {
		return checked{}, fmt.Errorf("adapter: tool %q: TaskAfterInput needs TaskSupport optional or required", name)
	}
	if maxArgs < 0 || maxArgs > MaxArgumentBytesLimit {
		return checked{}, fmt.Errorf("adapter: tool %q: MaxArgumentBytes %d: want 0 (the defaults) to %d (what a Function URL request can carry)", name, maxArgs, MaxArgumentBytesLimit)
	}
	deploy, err := deployNeedsOf(tables, buckets, timeout, memoryMB)
	if err != nil {
		return checked{}, fmt.Errorf("adapter: tool %q: %w", name, err)
	}
	return checked{tasks: tasks, deploy: deploy}, nil
}

func define[In, Out any](d ToolDef[In, Out]) (*Tool, error) {
	c, err := check(d.Name, d.TaskSupport, d.TaskAfterInput, d.MaxArgumentBytes, d.Tables, d.Buckets, d.Timeout, d.MemoryMB)
	if err != nil {
		return nil, err
	}
	tasks, deploy := c.tasks, c.deploy
	in, err := schemaFor[In](d.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("adapter: tool %q input schema: %w", d.Name, err)
	}
	if in.Type != "object" {
		return nil, fmt.Errorf("adapter: tool %q input must be an object type (MCP arguments are an object), got %q", d.Name, in.Type)
	}
	if err := d.RefineInput.apply(in, "input"); err != nil {
		return nil, fmt.Errorf("adapter: tool %q: %w", d.Name, err)
	}
	var (
		out  *jsonschema.Schema
		outR *jsonschema.Resolved
	)
	// A Content tool advertises an output schema only when given one:
	// inferred from Content, it would describe nothing the client
	// receives, and oblige every result to carry structured content.
	if ot := reflect.TypeFor[Out](); d.OutputSchema != nil || (ot != contentType && ot != reflect.PointerTo(contentType)) {
		if out, err = schemaFor[Out](d.OutputSchema); err != nil {
			return nil, fmt.Errorf("adapter: tool %q output schema: %w", d.Name, err)
		}
	}
	if err := d.RefineOutput.apply(out, "output"); err != nil {
		return nil, fmt.Errorf("adapter: tool %q: %w", d.Name, err)
	}
	inR, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("adapter: tool %q input schema: %w", d.Name, err)
	}
	if out != nil {
		if outR, err = out.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
			return nil, fmt.Errorf("adapter: tool %q output schema: %w", d.Name, err)
		}
	}
	return &Tool{
		name: d.Name, title: d.Title, description: d.Description,
		readOnly: d.ReadOnly, destructive: d.Destructive, idem: d.Idempotent, ow: d.OpenWorld,
		scopes: append([]string(nil), d.Scopes...), tasks: tasks, taskAfterInput: d.TaskAfterInput, maxArgs: d.MaxArgumentBytes, needs: append([]CredentialNeed(nil), d.Credentials...),
		deploy:   deploy,
		inSchema: in, outSchema: out, inResolved: inR, outResolved: outR, inFast: compileFast(in),
		outputTrusted: d.OutputSchema == nil && len(d.RefineOutput) == 0 && !marshalsItself(reflect.TypeFor[Out](), map[reflect.Type]bool{}),
		outNils:       newEmptyNils(reflect.TypeFor[Out](), out),
		bind:          binder(d.Handler),
	}, nil
}

// binder returns what decodes a call's validated arguments into In and
// hands them to h.
func binder[In, Out any](h HandlerFunc[In, Out]) func(args json.RawMessage) (func(ctx context.Context, call *Call) (any, error), error) {
	return func(args json.RawMessage) (func(ctx context.Context, call *Call) (any, error), error) {
		var v In
		if err := json.Unmarshal(args, &v); err != nil {
			// The schema accepted the arguments but Go could not decode
			// them (e.g. a number out of an int's range).
			// The decoder's message quotes the input: neither the
			// answer nor the audit keeps it.
			why := jsonErrorText(err)
			return nil, NewError(CodeValidation, "arguments do not fit the tool's input type").
				WithDetails([]Issue{{Keyword: "type", Message: why}}).WithCause(errors.New(why))
		}
		return func(ctx context.Context, call *Call) (any, error) { return h(ctx, call, v) }, nil
	}
}

func schemaFor[T any](given *jsonschema.Schema) (*jsonschema.Schema, error) {
	if given != nil {
		return given.CloneSchemas(), nil
	}
	rt := reflect.TypeFor[T]()
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	return inferSchema(rt)
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Description returns the tool's description.
func (t *Tool) Description() string { return t.description }

// MaxArgumentBytesLimit bounds ToolDef.MaxArgumentBytes: a Function URL
// request reaches the gateway as an invocation event of at most 6 MiB
// (Lambda's synchronous payload, 6,291,456 bytes) holding the body as a JSON
// string beside the request's headers and context; 128 KiB of it are left
// to those and to the string's escapes.
const MaxArgumentBytesLimit = 6<<20 - 128<<10

// MaxArgumentBytes returns the largest arguments the tool declared it
// takes (ToolDef.MaxArgumentBytes), 0 when it declared none.
func (t *Tool) MaxArgumentBytes() int { return t.maxArgs }

// Destructive reports whether the tool is annotated destructive.
func (t *Tool) Destructive() bool { return t.destructive }

// ReadOnly reports whether the tool is annotated read-only.
func (t *Tool) ReadOnly() bool { return t.readOnly }

// Idempotent reports whether the tool is annotated idempotent.
func (t *Tool) Idempotent() bool { return t.idem }

// Scopes returns the scopes a caller must hold.
func (t *Tool) Scopes() []string { return append([]string(nil), t.scopes...) }

// InputSchema returns a copy of the input schema (nil for a forwarded tool
// whose schema does not decode or resolve: see [ForwardedTool]).
func (t *Tool) InputSchema() *jsonschema.Schema {
	s := t.schemas()
	if s == nil {
		return nil
	}
	return s.inSchema.CloneSchemas()
}

// OutputSchema returns a copy of the output schema; nil for a [Content] tool
// defined without one (and as InputSchema for a forwarded tool).
func (t *Tool) OutputSchema() *jsonschema.Schema {
	s := t.schemas()
	if s == nil || s.outSchema == nil {
		return nil
	}
	return s.outSchema.CloneSchemas()
}

var (
	contentType   = reflect.TypeFor[Content]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshalsItself reports whether t, or any type reachable from it, has its own
// JSON or text marshalling, whose output the inferred schema cannot predict.
func marshalsItself(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return marshalsItself(t.Elem(), seen)
	case reflect.Map:
		return marshalsItself(t.Key(), seen) || marshalsItself(t.Elem(), seen)
	case reflect.Interface:
		return true // any value can hide behind it
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && marshalsItself(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
