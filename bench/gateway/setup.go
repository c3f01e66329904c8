package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/benchkit"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
	"github.com/mcpfn/mcpfn/localtest"
)

const (
	// echoFn is the function both gateways forward to (bench/gateway/echo).
	echoFn   = "BenchGatewayEcho"
	echoPkg  = "./bench/gateway/echo"
	echoTool = "echo"
	// echoScope is the scope mcpfn's gateway checks on every call, as a
	// deployed tool's: the bench's token carries it.
	echoScope = "bench:echo"
	region    = "us-east-1"
	// sessionKey is template.yaml's GatewaySessionKey, which the local
	// stack's Secrets Manager stand-in holds as a deployment would.
	sessionKey = "GatewaySessionKey"
)

// echoDef is the echo tool as mcpfn's catalog declares it (the gateway
// lists it and checks its scope; it never runs the handler).
var echoDef = adapter.MustDefine(adapter.ToolDef[echoArgs, echoArgs]{
	Name: echoTool, Description: "Echoes its text.", ReadOnly: true, Idempotent: true,
	Scopes:  []string{echoScope},
	Handler: func(_ context.Context, _ *adapter.Call, in echoArgs) (echoArgs, error) { return in, nil },
})

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// binaries are the builds the bench runs: both gateways as deployed (gw),
// and their profiling builds (-tags mcpfn_pprof) when a profile is asked
// for, by flavour.
type binaries struct {
	gw, pprof [nFlavours]string
}

// build builds the gateways (the function is the stack's to build).
func build(ctx context.Context, o options) (binaries, error) {
	var b binaries
	p, err := project.Find(".")
	if err != nil {
		return b, err
	}
	binDir, err := filepath.Abs(o.BinDir)
	if err != nil {
		return b, err
	}
	pkgs := map[int]string{mcpfnGW: "./cmd/mcpfn-gateway", bare: "./bench/gateway/forwarder"}
	names := map[int]string{mcpfnGW: "mcpfn-gateway", bare: "bare-forwarder"}
	for _, i := range []int{mcpfnGW, bare} {
		b.gw[i] = filepath.Join(binDir, names[i])
		if err := benchkit.Build(ctx, p.Root, pkgs[i], b.gw[i]); err != nil {
			return b, err
		}
		if o.CPUProfile != "" || len(o.coldKinds()) > 0 {
			b.pprof[i] = filepath.Join(binDir, names[i]+"-pprof")
			if err := benchkit.Build(ctx, p.Root, pkgs[i], b.pprof[i], "mcpfn_pprof"); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// startStack starts the local stack with the echo function only, a pool of
// warm emulators as large as the most concurrent clients (and two more,
// for the moments one is still settling).
func startStack(ctx context.Context, o options) (*localtest.Stack, error) {
	return localtest.Start(ctx, localtest.Config{
		Dir: o.Dir, BinDir: o.BinDir,
		MCPAddr: "127.0.0.1:0", InvokeAddr: "127.0.0.1:0", DynamoDBAddr: "127.0.0.1:0",
		XRayAddr: "127.0.0.1:0", OTLPAddr: "127.0.0.1:0", IssuerAddr: "127.0.0.1:0",
		AgentCoreAddr: "127.0.0.1:0", ViewerAddr: "127.0.0.1:0",
		PoolSize:  o.maxClients() + 2,
		Functions: []localtest.FunctionSpec{}, // the echo only
		ExtraFunctions: []localtest.FunctionSpec{{
			Name: echoFn, Package: echoPkg, Tool: echoTool, Stripped: true,
			// A bare function: nothing of mcpfn's runs in it.
			Env: map[string]string{audit.EnvTable: ""},
		}},
		ExtraTools: []*adapter.Tool{echoDef},
		Stdout:     o.Progress,
	})
}

// awsEnv is what both gateway processes get of AWS: the gateway role's
// credentials, the region, the stack's Invoke API, and nothing of the
// caller's own AWS configuration.
func awsEnv(st *localtest.Stack) []string {
	c := st.GatewayCredentials()
	return []string{
		"AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=" + c.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + c.SecretAccessKey,
		"AWS_SESSION_TOKEN=" + c.SessionToken,
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_LAMBDA=" + st.InvokeURL(),
		"TZ=UTC",
	}
}

// mcpfnEnv is cmd/mcpfn-gateway's environment: template.yaml's
// GatewayFunction with the local issuer, the stack's endpoints and a
// catalog of the echo tool alone, written to dir.
func mcpfnEnv(st *localtest.Stack, dir string) ([]string, error) {
	cat := &catalog.File{Version: catalog.Version, Tools: []catalog.Entry{{
		Function: catalog.FunctionID(echoTool), Package: echoPkg, Tool: echoDef.Declaration(),
	}}}
	b, err := cat.Marshal()
	if err != nil {
		return nil, err
	}
	catPath, err := filepath.Abs(filepath.Join(dir, catalog.FileName))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(catPath, b, 0o644); err != nil {
		return nil, err
	}
	key := st.KeySecret(echoFn)
	if key == "" {
		return nil, fmt.Errorf("the stack gave %s no call key", echoFn)
	}
	return append(awsEnv(st),
		"AWS_ENDPOINT_URL_DYNAMODB="+st.DynamoDBEndpoint(),
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+st.SecretsURL(),
		catalog.EnvPath+"="+catPath,
		gateway.EnvAuthMode+"="+string(gateway.AuthJWT),
		gateway.EnvJWTIssuer+"="+st.Issuer(),
		gateway.EnvJWTAudience+"="+localtest.Audience,
		gateway.EnvJWTJWKSURL+"="+strings.TrimSuffix(st.Issuer(), "/")+"/.well-known/jwks.json",
		gateway.EnvToolFunctions+"="+echoTool+"="+echoFn,
		calltoken.EnvKeySecrets+"="+echoTool+"="+key,
		gateway.EnvSessionKeySecret+"="+secretsstandin.ARN(sessionKey),
		audit.EnvTable+"="+st.AuditTable(),
		// As template.yaml sets it.
		gateway.EnvInvokeTimeout+"=25s",
	), nil
}

// bareEnv is the forwarder's environment.
func bareEnv(st *localtest.Stack) []string {
	return append(awsEnv(st), "FORWARD_FUNCTION="+echoFn)
}

// lambdaClient is the bench's own client for the direct Invokes: the SDK's
// defaults (as both gateways' clients), the gateway role's credentials.
func lambdaClient(st *localtest.Stack) *lambda.Client {
	return lambda.New(lambda.Options{
		Region:       region,
		BaseEndpoint: aws.String(st.InvokeURL()),
		Credentials:  credentials.StaticCredentialsProvider{Value: st.GatewayCredentials()},
	})
}
