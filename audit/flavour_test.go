package audit_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The default build is the lite one: a function built without tags links
// neither the X-Ray SDK (and the aws-sdk-go v1 it pulls in) nor
// OpenTelemetry; the tags mcpfn_xraysdk and mcpfn_otel bring each back
// (docs/decisions/0004-xray-emitter.md, 0019-opentelemetry.md).
func TestBuildFlavourDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const (
		xraySDK = "github.com/aws/aws-xray-sdk-go/xray"
		sdkV1   = "github.com/aws/aws-sdk-go/aws"
		otelSDK = "go.opentelemetry.io/otel/sdk/trace"
	)
	for _, tc := range []struct {
		tags        string
		with, witho []string
	}{
		{"lambda.norpc", nil, []string{xraySDK, sdkV1, otelSDK}},
		{"lambda.norpc,mcpfn_xraysdk", []string{xraySDK, sdkV1}, []string{otelSDK}},
		{"lambda.norpc,mcpfn_otel", []string{otelSDK}, []string{xraySDK, sdkV1}},
		{"lambda.norpc,mcpfn_xraysdk,mcpfn_otel", []string{xraySDK, sdkV1, otelSDK}, nil},
	} {
		out, err := exec.Command("go", "list", "-deps", "-tags", tc.tags, "github.com/mcpfn/mcpfn/adapter").Output()
		if err != nil {
			t.Fatalf("go list -tags %s: %v", tc.tags, err)
		}
		deps := strings.Fields(string(out))
		for _, p := range tc.with {
			if !slices.Contains(deps, p) {
				t.Errorf("-tags %s: %s not linked", tc.tags, p)
			}
		}
		for _, p := range tc.witho {
			if slices.Contains(deps, p) {
				t.Errorf("-tags %s: %s linked", tc.tags, p)
			}
		}
	}
}
