package adapter

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	json "github.com/segmentio/encoding/json"
)

// HandlerFunc is a tool's business logic: typed input in, typed output or an
// error out. It runs with the call's context (cancelled reserve before the
// Lambda deadline) and the call's facts; it needs nothing of Lambda, MCP or
// audit. Return an *Error for failures the caller should see; any other error
// reaches the caller as INTERNAL_SERVER_ERROR.
type HandlerFunc[In, Out any] func(ctx context.Context, call *Call, in In) (Out, error)

// ToolDef describes a tool. Its input and output schemas are inferred from In
// and Out with github.com/google/jsonschema-go (the library the MCP go-sdk
// uses), so the schema on tools/list and the one the function validates are the
// same value.
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

	// InputSchema / OutputSchema override the inferred schemas (rarely
	// needed: prefer jsonschema struct tags).
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema

	Handler HandlerFunc[In, Out]
}

// Tool is a defined tool, ready for [New] or [Start]. It is immutable and safe
// to share between concurrent calls.
type Tool struct {
	name, title, description        string
	readOnly, destructive, idem, ow bool
	scopes                          []string
	needs                           []CredentialNeed
	inSchema, outSchema             *jsonschema.Schema
	inResolved, outResolved         *jsonschema.Resolved
	inFast                          *fastSchema // nil: always jsonschema-go
	// outputTrusted: Out's schema was inferred and no type inside Out
	// marshals itself, so a value of type Out always matches it and step 7
	// can skip re-validating the handler's own typed output.
	outputTrusted bool

	// bind decodes validated arguments into In and returns the handler call
	// for them. Decoding happens on the caller's goroutine: the handler's
	// goroutine starts with a small stack that a recursive decode would make
	// it grow and copy on every call.
	bind func(args json.RawMessage) (func(ctx context.Context, call *Call) (any, error), error)
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Define checks d and infers its schemas.
func Define[In, Out any](d ToolDef[In, Out]) (*Tool, error) {
	if !toolName.MatchString(d.Name) {
		return nil, fmt.Errorf("adapter: tool name %q must match %s", d.Name, toolName)
	}
	if d.Handler == nil {
		return nil, fmt.Errorf("adapter: tool %q has no handler", d.Name)
	}
	in, err := schemaFor[In](d.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("adapter: tool %q input schema: %w", d.Name, err)
	}
	if in.Type != "object" {
		return nil, fmt.Errorf("adapter: tool %q input must be an object type (MCP arguments are an object), got %q", d.Name, in.Type)
	}
	out, err := schemaFor[Out](d.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("adapter: tool %q output schema: %w", d.Name, err)
	}
	inR, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("adapter: tool %q input schema: %w", d.Name, err)
	}
	outR, err := out.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("adapter: tool %q output schema: %w", d.Name, err)
	}
	h := d.Handler
	return &Tool{
		name: d.Name, title: d.Title, description: d.Description,
		readOnly: d.ReadOnly, destructive: d.Destructive, idem: d.Idempotent, ow: d.OpenWorld,
		scopes: append([]string(nil), d.Scopes...), needs: append([]CredentialNeed(nil), d.Credentials...),
		inSchema: in, outSchema: out, inResolved: inR, outResolved: outR, inFast: compileFast(in),
		outputTrusted: d.OutputSchema == nil && !marshalsItself(reflect.TypeFor[Out](), map[reflect.Type]bool{}),
		bind: func(args json.RawMessage) (func(ctx context.Context, call *Call) (any, error), error) {
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
		},
	}, nil
}

// MustDefine is Define for package-level tool variables; it panics on error.
func MustDefine[In, Out any](d ToolDef[In, Out]) *Tool {
	t, err := Define(d)
	if err != nil {
		panic(err)
	}
	return t
}

func schemaFor[T any](given *jsonschema.Schema) (*jsonschema.Schema, error) {
	if given != nil {
		return given.CloneSchemas(), nil
	}
	rt := reflect.TypeFor[T]()
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	return jsonschema.ForType(rt, &jsonschema.ForOptions{})
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Destructive reports whether the tool is annotated destructive.
func (t *Tool) Destructive() bool { return t.destructive }

// Scopes returns the scopes a caller must hold.
func (t *Tool) Scopes() []string { return append([]string(nil), t.scopes...) }

// InputSchema returns a copy of the input schema.
func (t *Tool) InputSchema() *jsonschema.Schema { return t.inSchema.CloneSchemas() }

// OutputSchema returns a copy of the output schema.
func (t *Tool) OutputSchema() *jsonschema.Schema { return t.outSchema.CloneSchemas() }

// MCPTool returns the tool as MCP's tools/list describes it. The gateway and a
// function's own tools/list both use it, so the two cannot drift.
func (t *Tool) MCPTool() *mcp.Tool {
	destructive := t.destructive
	openWorld := t.ow
	mt := &mcp.Tool{
		Name:        t.name,
		Title:       t.title,
		Description: t.description,
		InputSchema: t.inSchema.CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{
			Title:           t.title,
			ReadOnlyHint:    t.readOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.idem,
			OpenWorldHint:   &openWorld,
		},
	}
	// A Content tool (DefineContent) may have no output schema; a typed nil
	// in the field would read as a schema to the go-sdk.
	if t.outSchema != nil {
		mt.OutputSchema = t.outSchema.CloneSchemas()
	}
	if len(t.scopes) > 0 {
		mt.Meta = mcp.Meta{"mcpfn/scopes": t.Scopes()}
	}
	return mt
}

var (
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
