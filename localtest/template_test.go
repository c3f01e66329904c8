package localtest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// The local wiring is read from template.yaml: these tests pin what the
// template's references resolve to locally.
func TestTemplateFunctions(t *testing.T) {
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	n := newLocalNames(tmpl, false)
	gw, err := n.environment(gatewayID)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := gateway.ParseToolFunctions(gw[gateway.EnvToolFunctions])
	if err != nil {
		t.Fatal(err)
	}
	if tools["broadcast_get"] != "BroadcastGetFunction" {
		t.Errorf("%s resolves to %v", gateway.EnvToolFunctions, tools)
	}
	toolOf := map[string]string{}
	for tool, fn := range tools {
		toolOf[fn] = tool
	}
	cat := repoCatalog(t)
	specs, _, err := n.templateFunctions(toolOf, cat, "mcpfn-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	// Besides the tool functions, only the AgentCore interceptor (no tool).
	specs = slices.DeleteFunc(specs, func(s FunctionSpec) bool { return s.Name == "AgentCoreInterceptorFunction" && s.Tool == "" })
	if len(specs) != len(tools) {
		t.Fatalf("%d functions, want one per tool (%d)", len(specs), len(tools))
	}
	for _, s := range specs {
		if s.Package != "./functions/"+s.Tool || s.Name != s.LogicalID {
			t.Errorf("%+v: want package ./functions/<tool>, named by logical ID", s)
		}
		if s.Env["MCPFN_AUDIT_TABLE"] != "AuditTable" || s.Env["BROADCASTS_TABLE"] != "BroadcastsTable" || s.Env["MCPFN_AUDIT_RETENTION_DAYS"] != "90" {
			t.Errorf("%s environment %v", s.Name, s.Env)
		}
		if s.Env["AWS_LAMBDA_LOG_FORMAT"] != "JSON" {
			t.Errorf("%s: AWS_LAMBDA_LOG_FORMAT %q, want the template's LoggingConfig (JSON)", s.Name, s.Env["AWS_LAMBDA_LOG_FORMAT"])
		}
		// The defaults, but where a demo tool declares its own.
		timeout, memory := 10, 256
		switch s.Tool {
		case "broadcast_digest":
			timeout = 900
		case "broadcast_export":
			timeout, memory = 900, 1024
		case "broadcast_attach", "broadcast_attachment":
			memory = 512
		}
		if s.Timeout != timeout || s.MemorySize != memory {
			t.Errorf("%s timeout %d memory %d, want the template's %d s and %d MB", s.Name, s.Timeout, s.MemorySize, timeout, memory)
		}
	}
}

func TestTemplateValues(t *testing.T) {
	tmpl, err := samtemplate.Parse([]byte(`
Parameters:
  Days: {Type: Number, Default: 7}
  NoDefault: {Type: String}
Resources:
  T: {Type: AWS::DynamoDB::Table, Properties: {}}
  F: {Type: AWS::Serverless::Function, Properties: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	n := newLocalNames(tmpl, false)
	for _, tc := range []struct {
		in   any
		want string
	}{
		{map[string]any{"Ref": "T"}, "T"},
		{map[string]any{"Ref": "Days"}, "7"},
		{map[string]any{"Fn::GetAtt": []any{"F", "Arn"}}, "arn:aws:lambda:us-east-1:000000000000:function:F"},
		{map[string]any{"Fn::Sub": "${T.Arn}/index/x ${AWS::Region} ${F} ${!Literal}"}, "arn:aws:dynamodb:us-east-1:000000000000:table/T/index/x us-east-1 F ${Literal}"},
		{"plain", "plain"},
	} {
		got, err := n.value(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []any{map[string]any{"Ref": "NoDefault"}, map[string]any{"Ref": "Missing"}, map[string]any{"Fn::ImportValue": "x"}} {
		if got, err := n.value(bad); err == nil {
			t.Errorf("%v: %q, want an error", bad, got)
		}
	}
}

// The gateway's settings are what the gateway itself parses (gateway.
// ConfigFrom, as its process does): the template's, with auth jwt against
// the local issuer, and an unknown MCPFN_ variable is an error.
func TestGatewaySettingsRejectUnknownVariables(t *testing.T) {
	s := &Stack{iss: &issuer{url: "http://127.0.0.1:1"}}
	env, err := s.gatewaySettings(map[string]string{gateway.EnvInvokeTimeout: "25s", gateway.EnvAuthMode: "iam"}, map[string]string{"t": "F"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.ConfigFrom(func(k string) string { return env[k] })
	if err != nil || cfg.InvokeTimeout.String() != "25s" || cfg.Auth != gateway.AuthJWT || cfg.JWT.Issuer != "http://127.0.0.1:1" || cfg.Functions["t"] != "F" {
		t.Errorf("config %+v, %v: want 25s, jwt against the local issuer, t → F", cfg, err)
	}
	if _, err := s.gatewaySettings(map[string]string{"MCPFN_SOMETHING_NEW": "x"}, nil, nil); err == nil || !strings.Contains(err.Error(), "MCPFN_SOMETHING_NEW") {
		t.Errorf("unknown setting: %v, want an error naming it", err)
	}
	s.cfg.GatewayEnv = map[string]string{"MCPFN_ANOTHER": "x"}
	if _, err := s.gatewaySettings(nil, nil, nil); err == nil || !strings.Contains(err.Error(), "MCPFN_ANOTHER") {
		t.Errorf("unknown setting in GatewayEnv: %v, want an error naming it", err)
	}
}

// The AgentCore front is wired as template.yaml declares the gateway: its
// REQUEST interceptor (built from the directory its Makefile target
// builds), headers passed, one target per tool on the tool's function.
func TestAgentCoreWiringFromTemplate(t *testing.T) {
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	w, err := agentCoreFromTemplate(tmpl)
	if err != nil || w == nil {
		t.Fatalf("wiring %v, %v", w, err)
	}
	if w.gatewayID != "AgentCoreGateway" || w.interceptor != "AgentCoreInterceptorFunction" || !w.passHeaders {
		t.Fatalf("wiring %+v", w)
	}
	got := map[string]string{}
	for _, tg := range w.targets {
		got[tg.name+"___"+tg.tool] = tg.function
	}
	want := map[string]string{
		"broadcast-create___broadcast_create":         "BroadcastCreateFunction",
		"broadcast-get___broadcast_get":               "BroadcastGetFunction",
		"broadcast-list___broadcast_list":             "BroadcastListFunction",
		"broadcast-delete___broadcast_delete":         "BroadcastDeleteFunction",
		"broadcast-digest___broadcast_digest":         "BroadcastDigestFunction",
		"broadcast-attach___broadcast_attach":         "BroadcastAttachFunction",
		"broadcast-attachment___broadcast_attachment": "BroadcastAttachmentFunction",
		"broadcast-export___broadcast_export":         "BroadcastExportFunction",
	}
	if len(got) != len(want) {
		t.Fatalf("targets %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("target %s → %q, want %s", k, got[k], v)
		}
	}
	specs, _, err := newLocalNames(tmpl, false).templateFunctions(map[string]string{}, repoCatalog(t), "/x/mcpfn-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		if sp.Name == "AgentCoreInterceptorFunction" && (sp.Package != interceptorPackage || sp.Env[catalog.EnvPath] != "/x/mcpfn-tools.json") {
			t.Errorf("interceptor package %s with catalog %q, want mcpfn's own %s with the project's catalog", sp.Package, sp.Env[catalog.EnvPath], interceptorPackage)
		}
	}
}

// repoCatalog is this repository's catalog (the demo's mcpfn-tools.json).
func repoCatalog(t *testing.T) *catalog.File {
	t.Helper()
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(filepath.Join(filepath.Dir(tmpl.Path), catalog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
