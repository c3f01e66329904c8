package localtest

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// Environment variables read by [ConfigFromEnv] (DESIGN.md §5).
const (
	EnvMCPAddr          = "MCPFN_LOCAL_MCP_ADDR"
	EnvInvokeAddr       = "MCPFN_LOCAL_INVOKE_ADDR"
	EnvInvokeHosts      = "MCPFN_LOCAL_INVOKE_HOSTS" // comma separated, besides loopback
	EnvDynamoDBAddr     = "MCPFN_LOCAL_DYNAMODB_ADDR"
	EnvXRayAddr         = "MCPFN_LOCAL_XRAY_ADDR"
	EnvOTLPAddr         = "MCPFN_LOCAL_OTLP_ADDR"
	EnvSecretsAddr      = "MCPFN_LOCAL_SECRETS_ADDR"
	EnvIssuerAddr       = "MCPFN_LOCAL_ISSUER_ADDR"
	EnvAgentCoreAddr    = "MCPFN_LOCAL_AGENTCORE_ADDR"
	EnvViewerAddr       = "MCPFN_LOCAL_VIEWER_ADDR"
	EnvS3Addr           = "MCPFN_LOCAL_S3_ADDR"
	EnvDir              = "MCPFN_LOCAL_DIR"
	EnvDynamoDBEndpoint = "MCPFN_DYNAMODB_ENDPOINT"
)

// Defaults of the fields of [Config]: the addresses of DESIGN.md §5.
const (
	DefaultDir          = ".local"
	DefaultMCPAddr      = "127.0.0.1:8080"
	DefaultInvokeAddr   = "127.0.0.1:3001"
	DefaultDynamoDBAddr = "127.0.0.1:8000"
	DefaultXRayAddr     = "127.0.0.1:2000"
	// DefaultOTLPAddr: any free port (the stack tells functions and the
	// gateway where), so a developer's own collector on 4318 is left alone.
	DefaultOTLPAddr    = "127.0.0.1:0"
	DefaultSecretsAddr = "127.0.0.1:0"
	// DefaultIssuerAddr makes the local issuer's URL (the "iss" of its
	// tokens, part of every caller key) the same on every run.
	DefaultIssuerAddr = "127.0.0.1:8081"
	// DefaultAgentCoreAddr is the AgentCore Gateway stand-in's address.
	DefaultAgentCoreAddr = "127.0.0.1:8082"
	// DefaultViewerAddr is the audit viewer's address (8081 and 8082 are
	// the issuer's and the AgentCore front's).
	DefaultViewerAddr = "127.0.0.1:8083"
	// DefaultS3Addr: any free port (the stack tells functions where, and
	// prints it), as the Secrets Manager stand-in's.
	DefaultS3Addr   = "127.0.0.1:0"
	DefaultPoolSize = 4
	// DefaultDynamoDBHeap is DynamoDB Local's heap limit in the stack: a
	// long `mcpfn local` session's audit table (a few hundred thousand
	// rows) still Scans. The JVM takes the heap only as it needs it.
	DefaultDynamoDBHeap = "2g"
	// DefaultMaxConcurrency is how many emulators of one function may run at
	// once before the router answers 429, Lambda's answer when a function
	// reaches its concurrency limit.
	DefaultMaxConcurrency = 64
)

// Config configures [Start]. The zero value is `make local`'s stack on the
// addresses of DESIGN.md §5. Tests pass "127.0.0.1:0" addresses (port 0 picks
// a free port) so that several stacks can run at once.
type Config struct {
	// Root is the project's root: the directory of its go.mod, holding
	// template.yaml, mcpfn-tools.json and functions/. Default: the module
	// of the working directory.
	Root string
	// Dir holds the stack's files: bin/ (host builds), logs/<function>.log
	// and xray.jsonl. Default ".local" (relative to the working directory).
	Dir string
	// BinDir is where functions are built. Default Dir/bin. (The emulator
	// is in the per-user cache, internal/toolcache.)
	// Keeping it stable across runs lets `go build` skip up-to-date binaries.
	BinDir string

	// MCPAddr is the gateway's listen address; MCP is served on /mcp.
	MCPAddr string
	// InvokeAddr is the Lambda Invoke API router's listen address.
	InvokeAddr string
	// InvokeAllowedHosts are Host values the Invoke API serves besides
	// loopback names and addresses (e.g. host.docker.internal for a
	// container that invokes local functions). Default none.
	InvokeAllowedHosts []string
	// DynamoDBAddr is where the stack's DynamoDB endpoint listens: the
	// proxy that checks every request's signature and IAM (internal/
	// ddbproxy) in front of DynamoDB Local, which runs on a free port.
	// With DynamoDBEndpoint set the proxy takes a free port instead (the
	// endpoint given may well be on the default one).
	DynamoDBAddr string
	// XRayAddr is the UDP address of the X-Ray daemon stand-in.
	XRayAddr string
	// OTLPAddr is the TCP address of the OTLP/HTTP receiver stand-in
	// (internal/otlpstandin), which writes Dir/otlp.jsonl.
	OTLPAddr string
	// SecretsAddr is where the Secrets Manager stand-in listens (the call
	// keys). Default: any free loopback port.
	SecretsAddr string
	// IssuerAddr is where the local JWT issuer listens; its URL is
	// http://IssuerAddr. Default 127.0.0.1:8081.
	IssuerAddr string
	// AgentCoreAddr is where the AgentCore Gateway stand-in serves MCP on
	// /mcp (only when template.yaml declares an AgentCore Gateway).
	AgentCoreAddr string
	// ViewerAddr is where the audit viewer (audit/viewer) serves the
	// stack's audit table and X-Ray segments. Default 127.0.0.1:8083.
	ViewerAddr string
	// S3Addr is where the stack's S3 endpoint listens (TLS): the front
	// that checks every request's signature, presigned URLs and IAM
	// (internal/s3front) before the stand-in (internal/s3standin) sees it.
	// Default: any free loopback port.
	S3Addr string
	// DynamoDBEndpoint, when set, is an existing DynamoDB endpoint to use
	// instead of starting DynamoDB Local. Tables then get a unique suffix so
	// that stacks sharing the endpoint do not see each other's rows.
	DynamoDBEndpoint string
	// DynamoDBHeap is DynamoDB Local's heap limit (java -Xmx: "2g");
	// $MCPFN_DYNAMODB_LOCAL_HEAP wins over it. Default DefaultDynamoDBHeap.
	// DynamoDB Local answers a Scan or Query page only after loading every
	// item the whole request could return into the heap, so the limit
	// bounds the table a plain Scan (the audit viewer's list) still reads
	// (docs/local.md, "How long a session lasts").
	DynamoDBHeap string

	// PoolSize is how many emulators of each function are started with the
	// stack (warm capacity; each still has its cold start on its first
	// invoke). Default 4.
	PoolSize int
	// MaxConcurrency is how many emulators of one function may exist; more
	// are started on demand while all are busy, and beyond this the router
	// answers 429 TooManyRequestsException. Default 64; a FunctionSpec may
	// set its own.
	MaxConcurrency int

	// Functions are the tool functions to run. Nil: every
	// AWS::Serverless::Function of template.yaml except the gateway; an
	// empty, non-nil slice runs none of them (a stack of fixtures only —
	// the catalog's tools then answer that their function cannot be reached).
	Functions []FunctionSpec
	// ExtraFunctions are run besides Functions (fixtures used only
	// locally). A spec with Tool set is added to the gateway's tool →
	// function map; its tool definition goes in ExtraTools.
	ExtraFunctions []FunctionSpec
	// ExtraTools join the gateway's catalog (the project's
	// mcpfn-tools.json).
	ExtraTools []*adapter.Tool

	// GatewayEnv sets or replaces variables of the GatewayFunction's
	// template environment, e.g. a test's short MCPFN_INVOKE_TIMEOUT (an
	// MCPFN_ variable the stack does not know is an error, as in the
	// template). AWS_ENDPOINT_URL_LAMBDA among them points the gateway's
	// Lambda client at another Invoke endpoint: a test's fault-injecting
	// proxy in front of InvokeURL. Default none.
	GatewayEnv map[string]string

	// AsyncRetryDelays are the waits before the retries of a failed
	// asynchronous invocation (InvocationType Event): the first before
	// the first retry, the last before every later one. Default Lambda's,
	// DefaultAsyncRetryDelays (1 and 2 minutes); tests shorten them.
	AsyncRetryDelays []time.Duration

	// IAMTemplate, when set, is the template whose IAM the stack enforces
	// instead of the project's (everything else still comes from the
	// project's): a test removes a grant from a copy and sees the call it
	// was for refused.
	IAMTemplate string

	// Stdout receives the stack's progress lines; nil discards them.
	// Components log to files under Dir/logs instead.
	Stdout io.Writer
}

// FunctionSpec is one Lambda function of the stack.
type FunctionSpec struct {
	// Name is the function's name on the Invoke API: the name the gateway's
	// MCPFN_TOOL_FUNCTIONS maps a tool to. For template functions it is the
	// logical ID, as with `sam local start-lambda`.
	Name string
	// LogicalID is the function's logical ID in template.yaml, if any.
	LogicalID string
	// Package is the Go main package to build, e.g. "./functions/note_add"
	// (relative to the repository root) or a full import path.
	Package string
	// Tool is the MCP tool the function serves, if it is a tool function.
	Tool string
	// Env is the function's environment, with references already resolved.
	// Start adds AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SECRETS_MANAGER,
	// AWS_ENDPOINT_URL_S3 (with AWS_CA_BUNDLE and AWS_S3_USE_PATH_STYLE),
	// AWS_XRAY_DAEMON_ADDRESS, its role's session credentials and the
	// region; a tool
	// function without MCPFN_CALL_KEY_SECRET gets a key secret of its own.
	Env map[string]string
	// Timeout in seconds, as the template's Timeout. Default 10 (the
	// template's ToolTimeoutSeconds default).
	Timeout int
	// MemorySize in MB, reported to the function as Lambda does. Default 256.
	MemorySize int
	// MaxConcurrency overrides Config.MaxConcurrency for this function (a
	// reserved concurrency).
	MaxConcurrency int
	// EventInvoke is how the function's asynchronous invocations are
	// retried; nil: the template's EventInvokeConfig, else Lambda's
	// default (2 retries, 6 hours).
	EventInvoke *EventInvokeConfig
	// BuildTags are build tags besides lambda.norpc: a build flavour such
	// as mcpfn_xraysdk.
	BuildTags []string
	// RoleTool, for a function that serves a tool the gateway does not
	// route to it (Tool empty: a test invokes it directly), is that tool:
	// the function runs as the role a tool function of it would get. Nil
	// (and Tool empty): SAM's own policies only.
	RoleTool *adapter.Tool
	// Stripped builds the bootstrap trimmed and stripped, with the flags
	// `make build` uses for Lambda (GOFLAGS_LAMBDA), so its size is the
	// deployed one (for the host's architecture).
	Stripped bool
}

// ConfigFromEnv returns the Config that the MCPFN_LOCAL_* variables and
// MCPFN_DYNAMODB_ENDPOINT describe; unset variables keep the defaults.
func ConfigFromEnv() Config {
	get := func(name string) string { return strings.TrimSpace(os.Getenv(name)) }
	return Config{
		Dir:              get(EnvDir),
		MCPAddr:          get(EnvMCPAddr),
		InvokeAddr:       get(EnvInvokeAddr),
		DynamoDBAddr:     get(EnvDynamoDBAddr),
		XRayAddr:         get(EnvXRayAddr),
		OTLPAddr:         get(EnvOTLPAddr),
		SecretsAddr:      get(EnvSecretsAddr),
		IssuerAddr:       get(EnvIssuerAddr),
		AgentCoreAddr:    get(EnvAgentCoreAddr),
		ViewerAddr:       get(EnvViewerAddr),
		S3Addr:           get(EnvS3Addr),
		DynamoDBEndpoint: get(EnvDynamoDBEndpoint),
		InvokeAllowedHosts: strings.FieldsFunc(get(EnvInvokeHosts), func(r rune) bool {
			return r == ',' || r == ' '
		}),
	}
}

func (c *Config) defaults() {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&c.Dir, DefaultDir)
	def(&c.MCPAddr, DefaultMCPAddr)
	def(&c.InvokeAddr, DefaultInvokeAddr)
	def(&c.DynamoDBAddr, DefaultDynamoDBAddr)
	def(&c.XRayAddr, DefaultXRayAddr)
	def(&c.OTLPAddr, DefaultOTLPAddr)
	def(&c.SecretsAddr, DefaultSecretsAddr)
	def(&c.IssuerAddr, DefaultIssuerAddr)
	def(&c.AgentCoreAddr, DefaultAgentCoreAddr)
	def(&c.ViewerAddr, DefaultViewerAddr)
	def(&c.S3Addr, DefaultS3Addr)
	def(&c.DynamoDBHeap, DefaultDynamoDBHeap)
	if c.PoolSize <= 0 {
		c.PoolSize = DefaultPoolSize
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if len(c.AsyncRetryDelays) == 0 {
		c.AsyncRetryDelays = DefaultAsyncRetryDelays
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
}
