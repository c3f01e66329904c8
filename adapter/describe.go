package adapter

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"os"
)

// EnvDescribe, set to "1" outside Lambda, makes [Start] and [Serve] print the
// tool's [Description] as one line of JSON on stdout and exit 0, before
// anything else happens: `mcpfn template` and `mcpfn local` learn each
// function's tool this way, from the binary that deploys, so the catalog
// cannot drift from the code. On Lambda (AWS_LAMBDA_RUNTIME_API set) it is
// ignored.
//
// The catalog is fixed when the template is generated and reviewed with it:
// a deployed gateway never asks a running function what its scopes are.
const EnvDescribe = "MCPFN_DESCRIBE"

// DescriptionVersion is the version of the [Description] format.
const DescriptionVersion = "1"

// Description is what a function prints in describe mode.
type Description struct {
	Version string      `json:"mcpfnDescription"`
	Tool    Declaration `json:"tool"`
}

// ParseDescription reads what a function printed in describe mode.
func ParseDescription(b []byte) (Declaration, error) {
	var d Description
	if err := stdjson.Unmarshal(b, &d); err != nil {
		return Declaration{}, fmt.Errorf("adapter: not a tool description: %w", err)
	}
	if d.Version != DescriptionVersion {
		return Declaration{}, fmt.Errorf("adapter: tool description version %q, want %q (rebuild the function with this mcpfn)", d.Version, DescriptionVersion)
	}
	if d.Tool.Name == "" {
		return Declaration{}, errors.New("adapter: the tool description names no tool")
	}
	return d.Tool, nil
}

func describing() bool {
	return os.Getenv(EnvDescribe) == "1" && os.Getenv("AWS_LAMBDA_RUNTIME_API") == ""
}

// describe prints t's description and exits.
func describe(t *Tool) {
	b, err := stdjson.Marshal(Description{Version: DescriptionVersion, Tool: t.Declaration()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpfn: describing tool %s: %v\n", t.name, err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(append(b, '\n')); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
