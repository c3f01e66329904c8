package toolcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// The CloudFormation validator is @aws/cloudformation-validate (offline,
// WASM, no AWS credentials), installed from the embedded npm project
// npm/cloudformation-validate and run on the machine's Node by that
// project's cfn-validate.mjs, which the install writes beside node_modules
// so that its import resolves there. The script prints JSON; the types
// below read it, so the script and its readers change together.
const (
	validatorKind    = "cloudformation-validate"
	validatorPackage = "@aws/cloudformation-validate"
	validatorScript  = "cfn-validate.mjs"
	// validatorRetry is the command whose first run installs the validator.
	validatorRetry = "`mcpfn template -check`"
)

// CloudFormationValidatorVersion is the @aws/cloudformation-validate
// version the embedded lock pins.
func CloudFormationValidatorVersion() string {
	v, _ := npmLocked(validatorKind, validatorPackage)
	return v
}

// CloudFormationValidator returns the node on PATH and the path of the
// validator's script in the cache (installed with npm on first use): `node
// script template.yaml …` prints the findings as JSON, read by
// [Cache.ValidateCloudFormation]. When node is not on PATH, is older than
// the validator needs, or npm is missing for the first install, the error
// matches [ErrNoNode] and nothing is installed.
func (c *Cache) CloudFormationValidator(ctx context.Context) (node, script string, err error) {
	name := "the CloudFormation validator " + CloudFormationValidatorVersion()
	_, engine := npmLocked(validatorKind, validatorPackage)
	node, err = nodeFor(ctx, name, engine, validatorRetry)
	if err != nil {
		return "", "", err
	}
	script, err = c.ensureNPM(ctx, npmTool{
		name:  name,
		kind:  validatorKind,
		retry: validatorRetry,
		locate: func(dir string) (string, error) {
			for _, p := range []string{
				filepath.Join(dir, "node_modules", filepath.FromSlash(validatorPackage), "package.json"),
				filepath.Join(dir, validatorScript),
			} {
				if !isFile(p) {
					return "", fmt.Errorf("no %s", p)
				}
			}
			return filepath.Join(dir, validatorScript), nil
		},
	})
	if err != nil {
		return "", "", err
	}
	return node, script, nil
}

// CloudFormationReport is the validator's report on one template.
type CloudFormationReport struct {
	Path string `json:"path"` // as given to ValidateCloudFormation
	// Status is OK when the template was analysed in full (a report that is
	// not is an error of ValidateCloudFormation).
	Status   string                  `json:"status"`
	Version  string                  `json:"version"` // the validator's
	Findings []CloudFormationFinding `json:"diagnostics"`
}

// CloudFormationFinding is one finding of severity WARN or above: the part
// of the validator's StandardDiagnostic a caller judges or shows.
type CloudFormationFinding struct {
	RuleID   string `json:"ruleId"`   // F3002, E3012, W2001, …
	Severity string `json:"severity"` // FATAL, ERROR or WARN
	Message  string `json:"message"`
	// Entity is what the finding is on; nil for some findings on the
	// template as a whole.
	Entity       *CloudFormationEntity `json:"entity"`
	PropertyPath string                `json:"propertyPath"` // "Properties.BillingMode", "Outputs/X/Value.Fn::Sub"
	StartLine    int                   `json:"startLine"`
}

// CloudFormationEntity is the template entity a finding is on.
type CloudFormationEntity struct {
	LogicalID    string `json:"logicalId"`
	EntityType   string `json:"entityType"`   // Resource, Output, Parameter, …
	ResourceType string `json:"resourceType"` // for a resource
}

// LogicalID is the logical id the finding is on, "" for none.
func (f CloudFormationFinding) LogicalID() string {
	if f.Entity == nil {
		return ""
	}
	return f.Entity.LogicalID
}

// String is the finding on one line: severity, rule, line, where, message.
func (f CloudFormationFinding) String() string {
	where := f.LogicalID()
	if f.PropertyPath != "" {
		where = strings.TrimSpace(where + " " + f.PropertyPath)
	}
	return fmt.Sprintf("%s %s at line %d (%s): %s", f.Severity, f.RuleID, f.StartLine, where, f.Message)
}

// ValidateCloudFormation runs the validator (see CloudFormationValidator,
// also for its ErrNoNode errors) over the templates and returns their
// reports in the same order. A template the validator could not analyse in
// full is an error: its findings would be incomplete.
func (c *Cache) ValidateCloudFormation(ctx context.Context, templates ...string) ([]CloudFormationReport, error) {
	node, script, err := c.CloudFormationValidator(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, node, append([]string{script}, templates...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("toolcache: the CloudFormation validator (%s %s): %w\n%s", node, script, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var reports []CloudFormationReport
	if err := json.Unmarshal(stdout.Bytes(), &reports); err != nil {
		return nil, fmt.Errorf("toolcache: reading the CloudFormation validator's output: %w\n%s", err, stdout.Bytes())
	}
	if len(reports) != len(templates) {
		return nil, fmt.Errorf("toolcache: the CloudFormation validator reported on %d templates, want %d", len(reports), len(templates))
	}
	for _, r := range reports {
		if r.Status != "OK" {
			return nil, fmt.Errorf("toolcache: the CloudFormation validator %s on %s: status %s, want OK (the template was not analysed in full)", r.Version, r.Path, r.Status)
		}
	}
	return reports, nil
}
