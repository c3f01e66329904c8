package templatetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/toolcache"
)

// @aws/cloudformation-validate checks a template offline against the
// CloudFormation resource schemas and the cfn-lint rules, without AWS
// credentials. internal/toolcache installs it into the per-user cache, as
// for `mcpfn template -check`, and runs it; these tests decide, more
// strictly than -check (every WARN fails too, unless excused). `make
// validate-template` runs TestCloudFormationValidate alone.
const (
	cfnValidateExcuses = "templatetest/cfn-validate-excuses.json"
	// minReasonLen keeps "ok" or "false positive" out of the excuse file: a
	// reviewer needs to read why the finding does not apply.
	minReasonLen = 40
)

// cfnDiagnostic is one finding, as the validator reports it.
type cfnDiagnostic = toolcache.CloudFormationFinding

// cfnExcuse accepts one finding: the rule, the template entity (logical id
// of a resource, output, parameter…) and the property path must all equal
// the finding's, and message, when set, must occur in its message. Reason is
// what a reviewer reads to accept it.
type cfnExcuse struct {
	Rule    string `json:"rule"`
	Entity  string `json:"entity"`
	Path    string `json:"path"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason"`
}

func (e cfnExcuse) matches(d cfnDiagnostic) bool {
	return e.Rule == d.RuleID && e.Entity == d.LogicalID() && e.Path == d.PropertyPath &&
		strings.Contains(d.Message, e.Message)
}

// failing reports whether a severity fails the check: FATAL, ERROR and WARN.
func failing(severity string) bool {
	switch severity {
	case "FATAL", "ERROR", "WARN":
		return true
	}
	return false
}

// judgeCfnFindings returns the failing findings no excuse accepts and the
// excuses that accept no finding (stale: the template or the validator
// changed, and the excuse must go rather than wait to hide a new finding).
func judgeCfnFindings(diags []cfnDiagnostic, excuses []cfnExcuse) (unexcused []cfnDiagnostic, stale []cfnExcuse) {
	used := make([]bool, len(excuses))
	for _, d := range diags {
		if !failing(d.Severity) {
			continue
		}
		excused := false
		for i, e := range excuses {
			if e.matches(d) {
				used[i], excused = true, true
			}
		}
		if !excused {
			unexcused = append(unexcused, d)
		}
	}
	for i, e := range excuses {
		if !used[i] {
			stale = append(stale, e)
		}
	}
	return unexcused, stale
}

// parseCfnExcuses reads the excuse file strictly: unknown fields, a missing
// rule or entity, a short reason and duplicates are errors.
func parseCfnExcuses(data []byte) ([]cfnExcuse, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var excuses []cfnExcuse
	if err := dec.Decode(&excuses); err != nil {
		return nil, err
	}
	seen := map[cfnExcuse]bool{}
	for i, e := range excuses {
		switch {
		case e.Rule == "":
			return nil, fmt.Errorf("excuse %d: no rule", i)
		case e.Entity == "":
			return nil, fmt.Errorf("excuse %d (%s): no entity (the logical id the finding is on)", i, e.Rule)
		case len(strings.TrimSpace(e.Reason)) < minReasonLen:
			return nil, fmt.Errorf("excuse %d (%s on %s): the reason must say why the finding does not apply (at least %d characters)", i, e.Rule, e.Entity, minReasonLen)
		}
		key := e
		key.Reason = ""
		if seen[key] {
			return nil, fmt.Errorf("excuse %d (%s on %s %s): duplicate", i, e.Rule, e.Entity, e.Path)
		}
		seen[key] = true
	}
	return excuses, nil
}

// runCfnValidate runs the validator over the templates (paths relative to
// the repository root) and returns their reports in order. It skips the test
// only when there is no Node to run it on.
func runCfnValidate(t *testing.T, templates ...string) []toolcache.CloudFormationReport {
	t.Helper()
	cache, err := toolcache.Default(os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(templates))
	for i, tmpl := range templates {
		paths[i] = filepath.Join(repoRoot(t), tmpl)
	}
	reports, err := cache.ValidateCloudFormation(t.Context(), paths...)
	if errors.Is(err, toolcache.ErrNoNode) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return reports
}

// TestCloudFormationValidate fails on every FATAL, ERROR or WARN finding in
// template.yaml that templatetest/cfn-validate-excuses.json does not excuse,
// and on every excuse that no longer matches a finding.
func TestCloudFormationValidate(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), cfnValidateExcuses))
	if err != nil {
		t.Fatal(err)
	}
	excuses, err := parseCfnExcuses(data)
	if err != nil {
		t.Fatalf("%s: %v", cfnValidateExcuses, err)
	}
	report := runCfnValidate(t, "template.yaml")[0]
	unexcused, stale := judgeCfnFindings(report.Findings, excuses)
	for _, d := range unexcused {
		t.Errorf("template.yaml: %s\n\tfix the template, or add {rule, entity, path, reason} for it to %s", d, cfnValidateExcuses)
	}
	for _, e := range stale {
		t.Errorf("%s: the excuse for %s on %s %q matches no finding any more; remove it", cfnValidateExcuses, e.Rule, e.Entity, e.Path)
	}
}

// TestCloudFormationValidateReportsFindings: the validator, run as
// TestCloudFormationValidate runs it, reports the known findings of a
// fixture (a FATAL schema error and a WARN), none of them excused — so a
// run that silently finds nothing cannot make template.yaml pass.
func TestCloudFormationValidateReportsFindings(t *testing.T) {
	report := runCfnValidate(t, "templatetest/testdata/cfn-validate-findings.yaml")[0]
	unexcused, _ := judgeCfnFindings(report.Findings, nil)
	want := map[string]bool{
		"F3002 Table Properties.NotAProperty": false,
		"W2001 Unused Parameters/Unused":      false,
	}
	for _, d := range unexcused {
		key := d.RuleID + " " + d.LogicalID() + " " + d.PropertyPath
		if _, ok := want[key]; ok {
			want[key] = true
		}
	}
	for key, found := range want {
		if !found {
			t.Errorf("finding %q not reported; got %v", key, unexcused)
		}
	}
}

func TestJudgeCfnFindings(t *testing.T) {
	diag := func(rule, severity, entity, path, msg string) cfnDiagnostic {
		return cfnDiagnostic{RuleID: rule, Severity: severity, Message: msg, PropertyPath: path,
			Entity: &toolcache.CloudFormationEntity{LogicalID: entity}}
	}
	url := diag("F6101", "FATAL", "McpUrl", "Outputs/McpUrl/Value.Fn::Sub", "Fn::Sub variable '${GatewayFunctionUrl.FunctionUrl}' does not reference")
	other := diag("F6101", "FATAL", "McpUrl", "Outputs/McpUrl/Value.Fn::Sub", "Fn::Sub variable '${Typo.Arn}' does not reference")
	warn := diag("W2001", "WARN", "Unused", "Parameters/Unused", "not referenced")
	errOnOther := diag("E3012", "ERROR", "Table", "Properties.BillingMode", "wrong type")
	info := diag("I9040", "INFO", "Fn", "Properties.Tags", "no tags")
	excuse := cfnExcuse{Rule: "F6101", Entity: "McpUrl", Path: "Outputs/McpUrl/Value.Fn::Sub", Message: "${GatewayFunctionUrl.FunctionUrl}", Reason: "r"}

	for _, tc := range []struct {
		name          string
		diags         []cfnDiagnostic
		excuses       []cfnExcuse
		wantUnexcused []cfnDiagnostic
		wantStale     int
	}{
		{"excused", []cfnDiagnostic{url}, []cfnExcuse{excuse}, nil, 0},
		{"info is not a failure", []cfnDiagnostic{info}, nil, nil, 0},
		{"warn and error fail", []cfnDiagnostic{warn, errOnOther, info}, nil, []cfnDiagnostic{warn, errOnOther}, 0},
		{"message must match", []cfnDiagnostic{url, other}, []cfnExcuse{excuse}, []cfnDiagnostic{other}, 0},
		{"same rule elsewhere is not excused", []cfnDiagnostic{diag("F6101", "FATAL", "OtherOutput", "Outputs/OtherOutput/Value.Fn::Sub", url.Message)}, []cfnExcuse{excuse}, []cfnDiagnostic{diag("F6101", "FATAL", "OtherOutput", "Outputs/OtherOutput/Value.Fn::Sub", url.Message)}, 1},
		{"stale excuse", nil, []cfnExcuse{excuse}, nil, 1},
		{"excuse does not accept an info it matches", []cfnDiagnostic{diag("F6101", "INFO", "McpUrl", "Outputs/McpUrl/Value.Fn::Sub", url.Message)}, []cfnExcuse{excuse}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unexcused, stale := judgeCfnFindings(tc.diags, tc.excuses)
			if fmt.Sprint(unexcused) != fmt.Sprint(tc.wantUnexcused) {
				t.Errorf("unexcused = %v, want %v", unexcused, tc.wantUnexcused)
			}
			if len(stale) != tc.wantStale {
				t.Errorf("stale = %v, want %d", stale, tc.wantStale)
			}
		})
	}
}

func TestParseCfnExcuses(t *testing.T) {
	const reason = "a reason long enough for a reviewer to weigh it"
	for _, tc := range []struct {
		name, json string
		ok         bool
	}{
		{"valid", `[{"rule":"F6101","entity":"McpUrl","path":"Outputs/McpUrl/Value.Fn::Sub","reason":"` + reason + `"}]`, true},
		{"empty list", `[]`, true},
		{"unknown field", `[{"rule":"F6101","entity":"McpUrl","reason":"` + reason + `","resource":"x"}]`, false},
		{"no rule", `[{"entity":"McpUrl","reason":"` + reason + `"}]`, false},
		{"no entity", `[{"rule":"F6101","reason":"` + reason + `"}]`, false},
		{"short reason", `[{"rule":"F6101","entity":"McpUrl","reason":"false positive"}]`, false},
		{"duplicate", `[{"rule":"F6101","entity":"McpUrl","reason":"` + reason + `"},{"rule":"F6101","entity":"McpUrl","reason":"` + reason + ` again"}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCfnExcuses([]byte(tc.json))
			if (err == nil) != tc.ok {
				t.Errorf("parseCfnExcuses: err = %v, want ok = %v", err, tc.ok)
			}
		})
	}
}
