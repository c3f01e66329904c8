package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/internal/toolcache"
)

// skipWithoutNode skips a test that needs the validator to run.
func skipWithoutNode(t *testing.T) {
	t.Helper()
	for _, cmd := range []string{"node", "npm"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("the CloudFormation validator needs Node.js: %v", err)
		}
	}
}

// `mcpfn template -check` in this repository runs the validator over
// template.yaml and passes: its one finding is the McpUrl output's reference
// to GatewayFunctionUrl, which SAM generates from the gateway's
// FunctionUrlConfig and the validator does not model, and -check says it did
// not count it.
func TestTemplateCheckRunsTheValidator(t *testing.T) {
	skipWithoutNode(t)
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"template", "-check"}, nil, &out, &errb); code != 0 {
		t.Fatalf("mcpfn template -check: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		" found no errors in template.yaml",
		"not counted: 1 reference to GatewayFunctionUrl, which SAM generates",
		"are current",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mcpfn template -check said\n%s\nwant %q", out.String(), want)
		}
	}
}

// A template with an error outside mcpfn's regions (a property the table's
// schema lacks), otherwise current, fails -check with the finding's line,
// rule, resource and message; -no-validate and a machine without Node.js
// pass it, saying the validator was skipped.
func TestTemplateCheckFailsOnAValidatorError(t *testing.T) {
	p, gen, line := projectWith(t, "  BroadcastsTable:\n    Type: AWS::DynamoDB::Table\n    Properties:\n", "      NotAProperty: true\n")
	finding := fmt.Sprintf("template.yaml:%d: FATAL F3002 BroadcastsTable Properties.NotAProperty: Additional properties are not allowed ('NotAProperty' was unexpected)\n", line)

	t.Run("validated", func(t *testing.T) {
		skipWithoutNode(t)
		var out, errb bytes.Buffer
		if code := checkGenerated(t.Context(), p, gen, true, &out, &errb); code != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), finding) {
			t.Errorf("stdout:\n%s\nwant the finding %q", out.String(), finding)
		}
		if want := "mcpfn template -check: the CloudFormation validator"; !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "found 1 error in template.yaml") {
			t.Errorf("stderr:\n%s\nwant %q … found 1 error in template.yaml", errb.String(), want)
		}
	})
	t.Run("-no-validate", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := checkGenerated(t.Context(), p, gen, false, &out, &errb); code != 0 {
			t.Fatalf("exit %d, want 0\n%s%s", code, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), "skipped the CloudFormation validator (-no-validate)") || strings.Contains(out.String(), "F3002") {
			t.Errorf("stdout:\n%s", out.String())
		}
	})
	t.Run("no node", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		var out, errb bytes.Buffer
		if code := checkGenerated(t.Context(), p, gen, true, &out, &errb); code != 0 {
			t.Fatalf("exit %d, want 0\n%s%s", code, out.String(), errb.String())
		}
		if want := "skipped: the CloudFormation validator " + toolcache.CloudFormationValidatorVersion() + " runs on Node.js, and node is not on PATH"; !strings.Contains(out.String(), want) {
			t.Errorf("stdout:\n%s\nwant %q", out.String(), want)
		}
	})
}

// projectWith is this repository's template.yaml, mcpfn-tools.json and
// events/ in a temporary project, with insert at the line returned, after
// anchor (outside mcpfn's regions), and what `mcpfn template` generates
// there: the same files, so only the validator has something to say.
func projectWith(t *testing.T, anchor, insert string) (*project.Project, *generated, int) {
	t.Helper()
	repo, err := project.Find(".")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := readFile(t, repo.TemplatePath())
	at := strings.Index(tmpl, anchor)
	if at < 0 {
		t.Fatalf("%s has no %q", repo.TemplatePath(), anchor)
	}
	at += len(anchor)
	tmpl = tmpl[:at] + insert + tmpl[at:]
	line := strings.Count(tmpl[:at], "\n") + 1
	catJSON, err := os.ReadFile(repo.CatalogPath())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(catJSON)
	if err != nil {
		t.Fatal(err)
	}
	p := &project.Project{Root: t.TempDir(), Module: repo.Module}
	if err := os.WriteFile(p.TemplatePath(), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.CatalogPath(), catJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo.Root, eventsDir), filepath.Join(p.Root, eventsDir)); err != nil {
		t.Fatal(err)
	}
	return p, &generated{catalogPath: p.CatalogPath(), templatePath: p.TemplatePath(), catalog: cat, catalogJSON: catJSON, template: []byte(tmpl)}, line
}

// A WARN finding outside mcpfn's regions (a hard-coded availability zone)
// is printed and counted, and does not fail -check.
func TestTemplateCheckShowsValidatorWarnings(t *testing.T) {
	skipWithoutNode(t)
	const volume = "  ScratchVolume:\n    Type: AWS::EC2::Volume\n    Properties:\n      Size: 1\n      AvailabilityZone: us-east-1a\n"
	p, gen, line := projectWith(t, "\nResources:\n", volume)
	var out, errb bytes.Buffer
	if code := checkGenerated(t.Context(), p, gen, true, &out, &errb); code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		fmt.Sprintf("template.yaml:%d: WARN W3010 ScratchVolume Properties.AvailabilityZone: ", line+4),
		"found no errors in template.yaml (1 warning; not counted: 1 reference to GatewayFunctionUrl",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout:\n%s\nwant %q", out.String(), want)
		}
	}
}

// Only a dangling reference names a logical id, in each of its three
// forms; other findings name none.
func TestReferencedID(t *testing.T) {
	for msg, want := range map[string]string{
		"Fn::Sub variable '${GatewayFunctionUrl.FunctionUrl}' does not reference a valid resource, parameter, or pseudo-parameter": "GatewayFunctionUrl",
		"GetAtt 'FooFunctionUrl.FunctionUrl' references a resource that does not exist":                                            "FooFunctionUrl",
		"Ref 'FooFunctionUrl' does not reference a valid resource, parameter, or pseudo-parameter":                                 "FooFunctionUrl",
		"Fn::Sub variable '${AWS::Region}' does not reference a valid resource":                                                    "",
	} {
		if got := referencedID(toolcache.CloudFormationFinding{RuleID: "F6101", Message: msg}); got != want {
			t.Errorf("referencedID(%q) = %q, want %q", msg, got, want)
		}
	}
	if got := referencedID(toolcache.CloudFormationFinding{RuleID: "F3002", Message: "'FooFunctionUrl' was unexpected"}); got != "" {
		t.Errorf("referencedID of an F3002 = %q, want none", got)
	}
}
