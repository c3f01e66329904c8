// Command gentemplate rewrites template.yaml's generated blocks from
// handlers.Catalog() (package gentemplate); `make template` runs it:
//
//	go run ./internal/gentemplate/cmd/gentemplate [-f template.yaml]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/internal/gentemplate"
)

func main() {
	path := flag.String("f", "template.yaml", "the template to rewrite in place")
	flag.Parse()
	if err := run(*path); err != nil {
		fmt.Fprintln(os.Stderr, "gentemplate:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tools, err := gentemplate.Tools(handlers.Catalog())
	if err != nil {
		return err
	}
	out, err := gentemplate.Generate(src, tools)
	if err != nil || bytes.Equal(out, src) {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
