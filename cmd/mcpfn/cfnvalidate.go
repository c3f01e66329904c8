package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/internal/toolcache"
)

// validateTemplate is -check's last step: the CloudFormation validator
// (@aws/cloudformation-validate, offline, no AWS credentials) over the
// template at path, which mcpfn installs into the per-user cache on first
// use (progress lines on progress) and runs with the node on PATH. Findings
// go to stdout as "template.yaml:LINE: SEVERITY RULE ENTITY PATH: MESSAGE";
// FATAL and ERROR findings are the error, WARN findings are only shown.
// Without Node.js it says on stdout that it skipped the validator, and why,
// and does not fail: the validator is optional, the rest of -check is not.
func validateTemplate(ctx context.Context, path, rel string, stdout, progress io.Writer) error {
	cache, err := toolcache.Default(progress)
	if err != nil {
		return err
	}
	reports, err := cache.ValidateCloudFormation(ctx, path)
	if errors.Is(err, toolcache.ErrNoNode) {
		fmt.Fprintf(stdout, "skipped: %s\n", strings.TrimPrefix(err.Error(), "toolcache: "))
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w\n(-no-validate skips the CloudFormation validator)", err)
	}
	report := reports[0]
	// A template mcpfn cannot parse has the validator's findings to say so.
	samGenerated, _ := samGeneratedIDs(path)
	var errs, warns int
	var notCounted []string
	for _, f := range report.Findings {
		if id := referencedID(f); samGenerated[id] {
			notCounted = append(notCounted, id)
			continue
		}
		where := strings.TrimSpace(f.LogicalID() + " " + f.PropertyPath)
		fmt.Fprintf(stdout, "%s:%d: %s %s %s: %s\n", rel, f.StartLine, f.Severity, f.RuleID, where, f.Message)
		switch f.Severity {
		case "FATAL", "ERROR":
			errs++
		default:
			warns++
		}
	}
	if errs > 0 {
		return fmt.Errorf("the CloudFormation validator %s found %s in %s, printed above", report.Version, plural(errs, "error"), rel)
	}
	var notes []string
	if warns > 0 {
		notes = append(notes, plural(warns, "warning"))
	}
	if len(notCounted) > 0 {
		notes = append(notes, fmt.Sprintf("not counted: %s to %s, which SAM generates and the validator does not model",
			plural(len(notCounted), "reference"), strings.Join(slices.Compact(slices.Sorted(slices.Values(notCounted))), ", ")))
	}
	fmt.Fprintf(stdout, "the CloudFormation validator %s found no errors in %s", report.Version, rel)
	if len(notes) > 0 {
		fmt.Fprintf(stdout, " (%s)", strings.Join(notes, "; "))
	}
	fmt.Fprintln(stdout)
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// samGeneratedIDs are the logical ids of resources the SAM transform adds
// that a template may reference and the validator, which reads the template
// before the transform, does not know: <Function>Url, the AWS::Lambda::Url
// of an AWS::Serverless::Function with a FunctionUrlConfig (every mcpfn
// template's McpUrl output references the gateway's). The implicit roles and
// aliases the validator knows already.
func samGeneratedIDs(path string) (map[string]bool, error) {
	t, err := samtemplate.Load(path)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for id, r := range t.Resources("AWS::Serverless::Function") {
		if _, ok := r.Properties["FunctionUrlConfig"]; ok {
			ids[id+"Url"] = true
		}
	}
	return ids, nil
}

// danglingRef finds the logical id in the validator's message for a
// reference to no resource (rule F6101): '${X.Attr}' in a Fn::Sub, 'X.Attr'
// in a GetAtt, 'X' in a Ref.
var danglingRef = regexp.MustCompile(`'(?:\$\{)?([A-Za-z0-9]+)[.'}]`)

// referencedID is the logical id a dangling-reference finding names, "" for
// any other finding.
func referencedID(f toolcache.CloudFormationFinding) string {
	if f.RuleID != "F6101" {
		return ""
	}
	if m := danglingRef.FindStringSubmatch(f.Message); m != nil {
		return m[1]
	}
	return ""
}
