package adapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	json "github.com/segmentio/encoding/json"
)

// Declaration is a tool's definition as data: what `mcpfn template` reads
// from each function (see [Start]) and writes into the project's catalog
// file, and what a gateway or an AgentCore interceptor builds its catalog
// from with [ToolFromDeclaration]. It holds everything tools/list shows and
// everything the deployment is generated from; never a handler.
type Declaration struct {
	Name           string             `json:"name"`
	Title          string             `json:"title,omitempty"`
	Description    string             `json:"description,omitempty"`
	ReadOnly       bool               `json:"readOnly,omitempty"`
	Destructive    bool               `json:"destructive,omitempty"`
	Idempotent     bool               `json:"idempotent,omitempty"`
	OpenWorld      bool               `json:"openWorld,omitempty"`
	Scopes         []string           `json:"scopes,omitempty"`
	TaskSupport    TaskSupport        `json:"taskSupport"`
	TaskAfterInput bool               `json:"taskAfterInput,omitempty"`
	InputSchema    *jsonschema.Schema `json:"inputSchema"`
	OutputSchema   *jsonschema.Schema `json:"outputSchema,omitempty"`
	Tables         []TableAccess      `json:"tables,omitempty"`
	Buckets        []BucketAccess     `json:"buckets,omitempty"`
	TimeoutSeconds int                `json:"timeoutSeconds"`
	MemoryMB       int                `json:"memoryMB"`
	// MaxArgumentBytes is ToolDef.MaxArgumentBytes: the gateway's body
	// limit for this tool's calls (omitted: the gateway's default).
	MaxArgumentBytes int `json:"maxArgumentBytes,omitempty"`
}

// Declaration returns t's definition as data (schemas copied).
func (t *Tool) Declaration() Declaration {
	return Declaration{
		Name: t.name, Title: t.title, Description: t.description,
		ReadOnly: t.readOnly, Destructive: t.destructive, Idempotent: t.idem, OpenWorld: t.ow,
		Scopes:      t.Scopes(),
		TaskSupport: t.tasks, TaskAfterInput: t.taskAfterInput,
		InputSchema: t.InputSchema(), OutputSchema: t.OutputSchema(),
		Tables:         t.Tables(),
		Buckets:        t.Buckets(),
		TimeoutSeconds: int(t.deploy.timeout / time.Second),
		MemoryMB:       t.deploy.memoryMB,

		MaxArgumentBytes: t.maxArgs,
	}
}

// errNoHandler answers a call that reaches a tool built from a declaration.
var errNoHandler = errors.New("adapter: this tool was built from a declaration and has no handler; its own function serves it")

// ToolFromDeclaration builds the tool d describes, checked as [Define] checks
// a definition, for a catalog: its tools/list entry, scopes, task support
// and schemas are d's. It has no handler: a call that reaches it fails with
// INTERNAL_SERVER_ERROR (a gateway forwards calls to the tool's function).
func ToolFromDeclaration(d Declaration) (*Tool, error) {
	if d.InputSchema == nil {
		return nil, fmt.Errorf("adapter: declaration of %q has no input schema", d.Name)
	}
	def := ToolDef[json.RawMessage, Content]{
		Name: d.Name, Title: d.Title, Description: d.Description,
		ReadOnly: d.ReadOnly, Destructive: d.Destructive, Idempotent: d.Idempotent, OpenWorld: d.OpenWorld,
		Scopes: d.Scopes, TaskSupport: d.TaskSupport, TaskAfterInput: d.TaskAfterInput,
		InputSchema: d.InputSchema, OutputSchema: d.OutputSchema,
		Tables: d.Tables, Buckets: d.Buckets, Timeout: time.Duration(d.TimeoutSeconds) * time.Second, MemoryMB: d.MemoryMB,
		MaxArgumentBytes: d.MaxArgumentBytes,
		Handler:          func(context.Context, *Call, json.RawMessage) (Content, error) { return Content{}, errNoHandler },
	}
	return define(def)
}
