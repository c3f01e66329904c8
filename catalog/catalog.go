package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpfn/mcpfn/adapter"
)

// FileName is the catalog's file name, at the project's root and beside the
// gateway's and the interceptor's bootstrap.
const FileName = "mcpfn-tools.json"

// Version is the catalog format's version.
const Version = "1"

// EnvPath names the catalog file a gateway or interceptor loads; default
// FileName in $LAMBDA_TASK_ROOT (where Lambda unpacks the function), else in
// the working directory.
const EnvPath = "MCPFN_CATALOG"

// File is a catalog: the project's tools in name order.
type File struct {
	Version string  `json:"mcpfnCatalog"`
	Tools   []Entry `json:"tools"`
}

// Entry is one tool and the function that serves it.
type Entry struct {
	// Function is the function's logical id in template.yaml.
	Function string `json:"function"`
	// Package is the function's main package, relative to the module root
	// ("./functions/note_add").
	Package string              `json:"package"`
	Tool    adapter.Declaration `json:"tool"`
}

// Parse reads a catalog and checks it: the version, one entry per tool, each
// declaration a valid tool.
func Parse(b []byte) (*File, error) {
	var f File
	if err := decode(b, &f); err != nil {
		return nil, err
	}
	if _, err := f.Declared(); err != nil {
		return nil, err
	}
	return &f, nil
}

// decode decodes a catalog file into f (a File or a forwardedFile) and
// checks its version.
func decode[F interface{ version() string }](b []byte, f F) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if v := f.version(); v != Version {
		return fmt.Errorf("catalog: version %q, want %q (regenerate it with `mcpfn template`)", v, Version)
	}
	return nil
}

func (f *File) version() string { return f.Version }

// Load reads the catalog file at path.
func Load(path string) (*File, error) {
	b, err := read(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("catalog: %s does not exist; `mcpfn template` writes it", path)
		}
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return b, nil
}

// FromEnv loads the catalog a deployed gateway or interceptor was packaged
// with (see [EnvPath]).
func FromEnv() (*File, error) { return Load(envPath()) }

// forwardedFile is a catalog with each tool's declaration left as its JSON,
// for [adapter.ForwardedTool]. It has File's fields.
type forwardedFile struct {
	Version string `json:"mcpfnCatalog"`
	Tools   []struct {
		Function string          `json:"function"`
		Package  string          `json:"package"`
		Tool     json.RawMessage `json:"tool"`
	} `json:"tools"`
}

func (f *forwardedFile) version() string { return f.Version }

// ToolsFromEnv loads the catalog a deployed gateway or interceptor was
// packaged with (see [EnvPath]) and returns its tools, in catalog order, as
// a front that forwards every call needs them: [adapter.ForwardedTool]s.
// The file and each declaration are checked as [Load] checks them, except
// the insides of the schemas, which such a front never validates with (the
// functions validate with their own) and which `mcpfn template` and `mcpfn
// build` check when they write and package the catalog: decoding and
// resolving them was most of a gateway's cold start (issue 21).
func ToolsFromEnv() ([]*adapter.Tool, error) {
	path := envPath()
	b, err := read(path)
	if err != nil {
		return nil, err
	}
	var f forwardedFile
	if err := decode(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	out := make([]*adapter.Tool, 0, len(f.Tools))
	for _, e := range f.Tools {
		t, err := adapter.ForwardedTool(e.Tool)
		if err != nil {
			return nil, fmt.Errorf("%s: catalog: %w", path, err)
		}
		if seen[t.Name()] {
			return nil, fmt.Errorf("%s: catalog: tool %s is listed twice", path, t.Name())
		}
		seen[t.Name()] = true
		out = append(out, t)
	}
	return out, nil
}

func envPath() string {
	if path := os.Getenv(EnvPath); path != "" {
		return path
	}
	return filepath.Join(cmpOr(os.Getenv("LAMBDA_TASK_ROOT"), "."), FileName)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Marshal returns the catalog as it is written to its file: indented, the
// same bytes for the same tools.
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return b.Bytes(), nil
}

// Declared returns every tool of the catalog built from its declaration (no
// handlers: for tools/list, scopes and task support), in catalog order.
func (f *File) Declared() ([]*adapter.Tool, error) {
	seen := map[string]bool{}
	out := make([]*adapter.Tool, 0, len(f.Tools))
	for _, e := range f.Tools {
		if seen[e.Tool.Name] {
			return nil, fmt.Errorf("catalog: tool %s is listed twice", e.Tool.Name)
		}
		seen[e.Tool.Name] = true
		t, err := adapter.ToolFromDeclaration(e.Tool)
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// Entry returns the catalog's entry for tool.
func (f *File) Entry(tool string) (Entry, bool) {
	for _, e := range f.Tools {
		if e.Tool.Name == tool {
			return e, true
		}
	}
	return Entry{}, false
}

// Prefix is a tool's name in PascalCase, the start of every logical id
// generated for it: note_add → NoteAdd, note-search → NoteSearch.
func Prefix(tool string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(tool, func(r rune) bool { return r == '_' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// FunctionID is the logical id of the function that serves tool.
func FunctionID(tool string) string { return Prefix(tool) + "Function" }
