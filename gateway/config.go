package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/taskstore"
)

// AuthMode says how the gateway verifies callers. There is no default: a
// gateway without authentication is a deliberate choice ([AuthNone]), never an
// accident of configuration.
type AuthMode string

const (
	// AuthIAM trusts the IAM principal that a Function URL (AuthType
	// AWS_IAM) verified and put in the event's request context. Outside
	// Lambda no request carries one, so every request is refused: a header
	// claiming a principal is never trusted.
	AuthIAM AuthMode = "iam"
	// AuthJWT verifies a bearer JWT: signature against the issuer's JWKS,
	// issuer, audience and expiry.
	AuthJWT AuthMode = "jwt"
	// AuthNone serves every request without identity. Tools that require
	// scopes then fail closed in their functions (UNAUTHORIZED).
	AuthNone AuthMode = "none"
)

// Environment variable names read by [ConfigFromEnv]. template.yaml sets them.
const (
	EnvToolFunctions      = "MCPFN_TOOL_FUNCTIONS"       // "tool=function,tool2=arn:aws:lambda:…"
	EnvAuthMode           = "MCPFN_AUTH_MODE"            // iam | jwt | none
	EnvJWTIssuer          = "MCPFN_JWT_ISSUER"           // exact "iss"
	EnvJWTAudience        = "MCPFN_JWT_AUDIENCE"         // one of "aud"
	EnvJWTJWKSURL         = "MCPFN_JWT_JWKS_URL"         // default issuer + "/.well-known/jwks.json"
	EnvIAMScopes          = "MCPFN_IAM_SCOPES"           // scopes granted to every IAM principal (space or comma separated)
	EnvIAMSessionSubjects = "MCPFN_IAM_SESSION_SUBJECTS" // "true": an assumed role's subject includes the session name
	EnvAllowedHosts       = "MCPFN_ALLOWED_HOSTS"        // comma separated Host values
	EnvAllowedOrigins     = "MCPFN_ALLOWED_ORIGINS"      // comma separated browser origins
	EnvResourceURL        = "MCPFN_RESOURCE_URL"         // public URL of the MCP endpoint (RFC 9728 "resource")
	EnvInvokeTimeout      = "MCPFN_INVOKE_TIMEOUT"       // Go duration, default 30s
	EnvMaxBodyBytes       = "MCPFN_MAX_BODY_BYTES"       // default 1 MiB
	EnvInvokeAttempts     = "MCPFN_INVOKE_ATTEMPTS"      // SDK attempts per Invoke, default 2
	EnvMaxBatch           = "MCPFN_MAX_BATCH"            // largest 2025-03-26 batch accepted, default 64
	EnvMaxInvokes         = "MCPFN_MAX_INVOKES"          // Invokes in flight per process, default 128
	EnvMaxRequestInvokes  = "MCPFN_MAX_REQUEST_INVOKES"  // Invokes in flight per HTTP request (batch), default 32
	EnvMCPPath            = "MCPFN_MCP_PATH"             // default "/mcp"
	EnvListenAddr         = "MCPFN_LISTEN_ADDR"          // local server address, default 127.0.0.1:8080
	EnvToolsList          = "MCPFN_TOOLS_LIST"           // hide | show: tools a caller lacks scopes for (default hide)
	EnvTaskRunWindow      = "MCPFN_TASK_RUN_WINDOW"      // Go duration a task run may start in, default 40m
	EnvSessionKeySecret   = "MCPFN_SESSION_KEY_SECRET"   // secret id of the gateway's own key: session ids, task records
	EnvMaxTasksPerCaller  = "MCPFN_MAX_TASKS_PER_CALLER" // working tasks of one caller, default 10
	EnvMaxTasks           = "MCPFN_MAX_TASKS"            // working tasks of all callers, default 100
	EnvPayloadsBucket     = "MCPFN_PAYLOADS_BUCKET"      // the claim check's bucket (template.yaml's PayloadsBucket)
	EnvInlineResultBytes  = "MCPFN_INLINE_RESULT_BYTES"  // largest stored result answered inline, default 12 MiB
	EnvResultLinkTTL      = "MCPFN_RESULT_LINK_TTL"      // Go duration a result link serves, default 15m
	EnvResultLinks        = "MCPFN_RESULT_LINKS"         // "always": stored blobs always as resource_links
	// taskstore.EnvTable (MCPFN_TASKS_TABLE) names the tasks table;
	// MCPFN_TASK_TTL and MCPFN_TASK_POLL_INTERVAL_MS tune its tasks.
)

const (
	defaultJWKSPath    = "/.well-known/jwks.json"
	defaultMCPPath     = "/mcp"
	defaultListenAddr  = "127.0.0.1:8080"
	defaultMaxBody     = 1 << 20
	defaultTimeout     = 30 * time.Second
	defaultAttempts    = 2
	defaultMaxBatch    = 64
	defaultMaxInvokes  = 128
	defaultMaxReqInv   = 32
	defaultDeadlineRes = 250 * time.Millisecond
	defaultMaxTasksPer = 10
	defaultMaxTasks    = 100
)

// Invoker is the part of the Lambda API the gateway uses. *lambda.Client
// implements it; tests may too.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// JWTConfig configures [AuthJWT].
type JWTConfig struct {
	Issuer   string // required: the token's "iss" must equal it
	Audience string // required: the token's "aud" must contain it
	JWKSURL  string // default Issuer + "/.well-known/jwks.json"
	// ClockSkew tolerated on exp/nbf/iat. Default 30s.
	ClockSkew time.Duration
	// KeyRefreshInterval is the least time between two JWKS refreshes
	// triggered by an unknown kid (whoever's token it is). A key the issuer
	// publishes is usable within about this long, however many forged
	// tokens arrive. Default 10s.
	KeyRefreshInterval time.Duration
	// HTTPClient fetches the JWKS. Default: a client with a 5s timeout.
	HTTPClient *http.Client
}

// JWTConfigFromEnv reads the JWT settings (MCPFN_JWT_ISSUER,
// MCPFN_JWT_AUDIENCE, MCPFN_JWT_JWKS_URL) the gateway reads, for another
// front door that verifies the same tokens.
func JWTConfigFromEnv() JWTConfig {
	return JWTConfig{
		Issuer:   strings.TrimSpace(os.Getenv(EnvJWTIssuer)),
		Audience: strings.TrimSpace(os.Getenv(EnvJWTAudience)),
		JWKSURL:  strings.TrimSpace(os.Getenv(EnvJWTJWKSURL)),
	}
}

// withDefaults fills the JWKS URL (issuer + /.well-known/jwks.json) and the
// clock skew (30 s).
func (c JWTConfig) withDefaults() JWTConfig {
	if c.JWKSURL == "" {
		c.JWKSURL = strings.TrimRight(c.Issuer, "/") + defaultJWKSPath
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = 30 * time.Second
	}
	if c.KeyRefreshInterval <= 0 {
		c.KeyRefreshInterval = 10 * time.Second
	}
	return c
}

// Config configures a [Gateway]. Build it with [ConfigFromEnv] and set Tools,
// or fill it in directly.
type Config struct {
	// Tools is the catalog: tools/list is built from it, so its schemas are
	// the ones each function validates. The gateway never runs their
	// handlers.
	Tools []*adapter.Tool
	// Functions maps a tool name to the Lambda function (name, partial or full
	// ARN, optionally with :alias) that runs it. Every tool needs one.
	Functions map[string]string

	Auth AuthMode
	JWT  JWTConfig
	// IAMScopes are granted to every IAM principal in [AuthIAM] mode: IAM
	// carries no scopes, and the IAM policy that let the principal call the
	// Function URL is the grant.
	IAMScopes []string
	// IAMSessionSubjects makes an assumed role's subject the full
	// assumed-role ARN, session name included. Default (false): the subject
	// is the role (arn:…:sts::ACCOUNT:assumed-role/NAME) and the session
	// name, which the assumer chooses freely, is Identity.RoleSession.
	IAMSessionSubjects bool

	// ResourceURL is the public URL of the MCP endpoint, used as the RFC 9728
	// "resource" and to build the resource_metadata URL in 401 challenges.
	// Empty: derived from each request's Host (already checked against
	// AllowedHosts).
	ResourceURL string

	// AllowedHosts, when set, is the exhaustive list of Host values served
	// (on Lambda: the Function URL or API domain). Empty: only the go-sdk's
	// DNS-rebinding protection applies (a loopback listener accepts loopback
	// Host values only).
	AllowedHosts []string
	// AllowedOrigins are browser origins allowed besides same-origin
	// requests. Requests without Origin/Sec-Fetch-Site (non-browser MCP
	// clients) are not affected.
	AllowedOrigins []string

	// Path the MCP endpoint is served on. Default "/mcp".
	Path string

	// InvokeTimeout caps one forwarded call. It is further capped by the
	// gateway's own deadline minus DeadlineReserve, so a slow function yields
	// a TIMEOUT tool result rather than a gateway killed mid-response.
	InvokeTimeout   time.Duration
	DeadlineReserve time.Duration
	// InvokeAttempts is the SDK's attempts per Invoke (throttles, 5xx and
	// connection errors are retried with the same call id). Default 2.
	InvokeAttempts int
	// MaxBodyBytes bounds a request body (413 beyond). Default 1 MiB.
	MaxBodyBytes int64
	// MaxBatch bounds the number of messages in one JSON-RPC batch. Default 64.
	MaxBatch int
	// MaxInvokes bounds the Invokes in flight in this process, and
	// MaxInvokesPerRequest those of one HTTP request (a batch). A call over
	// either limit waits for a slot until its own deadline (the one its
	// Invoke would have had), then fails with RATE_LIMITED without reaching
	// Lambda. Defaults 128 and 32.
	MaxInvokes           int
	MaxInvokesPerRequest int

	// Signer signs every forwarded call with its function's key (package
	// calltoken). Nil: [New] loads one from Secrets Manager with the secrets
	// KeySecrets names (tool → secret id), through KeySecretsAPI or a client
	// from the default AWS configuration. A gateway that cannot sign cannot
	// forward: functions refuse unsigned envelopes.
	Signer        *calltoken.Signer
	KeySecrets    map[string]string
	KeySecretsAPI calltoken.SecretsAPI
	// SessionKeySecret names the secret (read through KeySecretsAPI at
	// cold start, its previous version still verifying) whose key MACs the
	// Mcp-Session-Id the gateway mints for initialize-era clients, so that
	// every instance verifies every other's. Empty: a random key of this
	// process, whose session ids other instances do not recognise: there a
	// client's requests fall back to the caller + request id key, and its
	// cancel misses a call another instance keyed by its session.
	SessionKeySecret string

	// ToolsList says what tools/list shows a caller of the tools whose
	// scopes it lacks: ToolsHide (default) leaves them out, ToolsShow lists
	// them (a call is still refused with FORBIDDEN before any invoke).
	ToolsList ToolsListMode

	// Lambda invokes the functions. Nil: a *lambda.Client from the default
	// AWS configuration (AWS_ENDPOINT_URL_LAMBDA is honoured by the SDK).
	Lambda Invoker
	// Spans receives the gateway's X-Ray subsegment of each forwarded call
	// (traced calls only). Nil: none are emitted. ConfigFromEnv sets what
	// MCPFN_TRACING chooses (audit.TracingFrom): by default the X-Ray
	// daemon emitter when AWS_XRAY_DAEMON_ADDRESS is set (Lambda with
	// tracing active), or OpenTelemetry over OTLP, or both. A buffering
	// emitter is flushed after each forward.
	Spans audit.SpanEmitter
	// Recorder writes the audit row of a call the function never saw (or
	// may not have seen): refused by the gateway, throttled, not found, or
	// an Invoke that failed. A call the function answered has its own row
	// and gets none from the gateway. Nil: no gateway rows. ConfigFrom sets
	// an *audit.Auditor when MCPFN_AUDIT_TABLE is set, as adapter.Start
	// does for a function.
	Recorder adapter.Recorder
	// Tasks is the tasks table of the MCP Tasks extension (package
	// taskstore). Nil: the extension is not advertised, every call is
	// synchronous, and a tool whose TaskSupport is required is a
	// configuration error. ConfigFrom sets it when MCPFN_TASKS_TABLE is set.
	Tasks *taskstore.Store
	// TaskRunWindow is how long after a task's (re)invoke Lambda may still
	// start its run: its call token lives that long. It must cover the
	// function's async queue and retries (EventInvokeConfig). A task still
	// working TaskRunWindow plus 15 minutes (Lambda's longest run) after
	// its last update is reported failed. Default 40m.
	TaskRunWindow time.Duration
	// awsConfig is the AWS configuration ConfigFrom loaded for the clients
	// it built, loaded once at its first call: New's clients share it. Nil
	// (a Config built by hand): New loads one of its own.
	awsConfig func() (aws.Config, error)
	// MaxTasksPerCaller and MaxTasks cap the working tasks of one caller
	// and of all callers together (a caller's tasks/update that resumes a
	// task counts too): a task over either is refused with RATE_LIMITED
	// naming the limit, and never created. A task's slot is free once it
	// stops working, or at the latest TaskRunWindow plus 15 minutes after
	// it was admitted (taskstore.Limits). Defaults 10 and 100. Under
	// AuthNone every caller is one caller.
	MaxTasksPerCaller int
	MaxTasks          int

	// PayloadsBucket is the claim check's bucket (docs/gateway.md, "Large
	// payloads"): arguments too large to send go there, and results the
	// functions stored there are read back. Empty: no claim check —
	// arguments are sent as they are (Lambda refuses what is too large)
	// and a stored result cannot be answered.
	PayloadsBucket string
	// Payloads reaches PayloadsBucket with the gateway's role. Nil: a
	// client from the default AWS configuration (AWS_ENDPOINT_URL_S3 is
	// honoured; AWS_S3_USE_PATH_STYLE=true for path-style addressing).
	Payloads *s3.Client
	// InlineResultBytes is the largest answer the gateway builds from a
	// stored result, its blobs base64-encoded (default 12 MiB; decision
	// 0037 says why). Above it the stored blobs are answered as
	// resource_links to presigned URLs, and a result too large even
	// without them as one resource_link to its JSON.
	InlineResultBytes int64
	// AlwaysLink answers every stored blob as a resource_link, whatever
	// the size (MCPFN_RESULT_LINKS=always).
	AlwaysLink bool
	// ResultLinkTTL is how long a presigned result link serves (default
	// 15m, at most 7 days, and never longer than the gateway's own
	// credentials, which sign it, last).
	ResultLinkTTL time.Duration
	// ArgumentLimits are the sizes past which arguments are stored rather
	// than sent (defaults: 5 MiB for an Invoke, 768 KiB for a task's
	// asynchronous Invoke, 128 KiB for a task record's params).
	ArgumentLimits ArgumentLimits

	// Logger; nil means slog.Default().
	Logger *slog.Logger

	// ServerName and ServerVersion are the MCP server implementation info.
	ServerName, ServerVersion string

	// FirstAnswer, if set, is called once, when the gateway has written its
	// first answer to a tools/call (the mcpfn-gateway command ends its
	// start-up collector setting there: internal/startgc).
	FirstAnswer func()
}

// ToolsListMode is [Config.ToolsList].
type ToolsListMode string

// The tools/list modes.
const (
	ToolsHide ToolsListMode = "hide"
	ToolsShow ToolsListMode = "show"
)

// ConfigFromEnv reads the MCPFN_* environment (see the Env* constants). It
// leaves Tools empty: the caller sets the catalog.
func ConfigFromEnv() (Config, error) {
	return ConfigFrom(os.Getenv)
}

// ConfigFrom is ConfigFromEnv over any variable source: the local stack
// reads the gateway's variables from template.yaml through it, so local and
// deployed configuration are parsed by one piece of code.
func ConfigFrom(getenv func(string) string) (Config, error) {
	var errs []error
	cfg := Config{
		Auth:           AuthMode(strings.ToLower(strings.TrimSpace(getenv(EnvAuthMode)))),
		ResourceURL:    strings.TrimSpace(getenv(EnvResourceURL)),
		AllowedHosts:   splitList(getenv(EnvAllowedHosts)),
		AllowedOrigins: splitList(getenv(EnvAllowedOrigins)),
		IAMScopes:      splitList(getenv(EnvIAMScopes)),
		Path:           strings.TrimSpace(getenv(EnvMCPPath)),
		JWT: JWTConfig{
			Issuer:   strings.TrimSpace(getenv(EnvJWTIssuer)),
			Audience: strings.TrimSpace(getenv(EnvJWTAudience)),
			JWKSURL:  strings.TrimSpace(getenv(EnvJWTJWKSURL)),
		},
	}
	cfg.ToolsList = ToolsListMode(strings.ToLower(strings.TrimSpace(getenv(EnvToolsList))))
	cfg.SessionKeySecret = strings.TrimSpace(getenv(EnvSessionKeySecret))
	secrets, err := calltoken.ParseSecrets(getenv(calltoken.EnvKeySecrets))
	if err != nil {
		errs = append(errs, err)
	}
	cfg.KeySecrets = secrets
	if v := strings.TrimSpace(getenv(EnvIAMSessionSubjects)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want true or false", EnvIAMSessionSubjects, v))
		}
		cfg.IAMSessionSubjects = b
	}
	fns, err := ParseToolFunctions(getenv(EnvToolFunctions))
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Functions = fns
	if v := strings.TrimSpace(getenv(EnvInvokeTimeout)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive Go duration such as 25s", EnvInvokeTimeout, v))
		}
		cfg.InvokeTimeout = d
	}
	intVar := func(name string, dst *int64) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
			}
			*dst = n
		}
	}
	if v := strings.TrimSpace(getenv(EnvTaskRunWindow)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive Go duration such as 40m", EnvTaskRunWindow, v))
		}
		cfg.TaskRunWindow = d
	}
	// One AWS configuration for every client the gateway builds: the audit
	// table's, the tasks table's, and New's (awsClients).
	cfg.awsConfig = loadAWSConfigOnce(context.Background())
	if table, opts, err := taskstore.OptionsFromEnv(getenv); err != nil {
		errs = append(errs, err)
	} else if table != "" {
		awsCfg, err := cfg.awsConfig()
		if err != nil {
			errs = append(errs, err)
		} else {
			cfg.Tasks = taskstore.New(audit.NewDynamoClient(awsCfg), table, opts)
		}
	}
	cfg.PayloadsBucket = strings.TrimSpace(getenv(EnvPayloadsBucket))
	intVar(EnvInlineResultBytes, &cfg.InlineResultBytes)
	if v := strings.TrimSpace(getenv(EnvResultLinkTTL)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive Go duration such as 15m", EnvResultLinkTTL, v))
		}
		cfg.ResultLinkTTL = d
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvResultLinks))); v {
	case "", "above-ceiling":
	case "always":
		cfg.AlwaysLink = true
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want always or above-ceiling", EnvResultLinks, v))
	}
	var attempts, maxBatch, maxInvokes, maxReqInvokes, maxTasksPer, maxTasks int64
	intVar(EnvMaxBodyBytes, &cfg.MaxBodyBytes)
	intVar(EnvInvokeAttempts, &attempts)
	intVar(EnvMaxBatch, &maxBatch)
	intVar(EnvMaxInvokes, &maxInvokes)
	intVar(EnvMaxRequestInvokes, &maxReqInvokes)
	intVar(EnvMaxTasksPerCaller, &maxTasksPer)
	intVar(EnvMaxTasks, &maxTasks)
	cfg.InvokeAttempts, cfg.MaxBatch = int(attempts), int(maxBatch)
	cfg.MaxInvokes, cfg.MaxInvokesPerRequest = int(maxInvokes), int(maxReqInvokes)
	cfg.MaxTasksPerCaller, cfg.MaxTasks = int(maxTasksPer), int(maxTasks)
	var auditor *audit.Auditor
	if getenv(audit.EnvTable) != "" {
		a, err := audit.NewFrom(context.Background(), getenv, cfg.awsConfig)
		if err != nil {
			errs = append(errs, err)
		} else {
			cfg.Recorder, auditor = a, a
		}
	}
	if auditor != nil {
		// One emitter (one OTLP exporter) for the gateway's rows and
		// its forwards.
		cfg.Spans = auditor.Emitter()
	} else if em, err := audit.TracingFrom(context.Background(), getenv, "mcpfn-gateway"); err != nil {
		errs = append(errs, err)
	} else {
		cfg.Spans = em
	}
	return cfg, errors.Join(errs...)
}

// ParseToolFunctions parses "tool=function,tool2=function2" (whitespace and
// newlines around entries are ignored).
func ParseToolFunctions(s string) (map[string]string, error) {
	out := make(map[string]string)
	for _, entry := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == ';' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		tool, fn, ok := strings.Cut(entry, "=")
		tool, fn = strings.TrimSpace(tool), strings.TrimSpace(fn)
		if !ok || tool == "" || fn == "" {
			return nil, fmt.Errorf("%s: entry %q: want tool=function", EnvToolFunctions, entry)
		}
		if prev, dup := out[tool]; dup && prev != fn {
			return nil, fmt.Errorf("%s: tool %q mapped twice (%q, %q)", EnvToolFunctions, tool, prev, fn)
		}
		out[tool] = fn
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// check fills defaults and rejects a configuration that would fail at the
// first call instead of at cold start.
func (c *Config) check() error {
	var errs []error
	switch c.Auth {
	case AuthIAM, AuthNone:
	case AuthJWT:
		if c.JWT.Issuer == "" || c.JWT.Audience == "" {
			errs = append(errs, fmt.Errorf("auth mode jwt needs %s and %s", EnvJWTIssuer, EnvJWTAudience))
		}
		c.JWT = c.JWT.withDefaults()
	case "":
		errs = append(errs, fmt.Errorf("%s is not set: choose iam, jwt, or none (none must be explicit)", EnvAuthMode))
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want iam, jwt, or none", EnvAuthMode, c.Auth))
	}
	if len(c.Tools) == 0 {
		errs = append(errs, errors.New("gateway: no tools in the catalog"))
	}
	seen := make(map[string]bool, len(c.Tools))
	for _, t := range c.Tools {
		if t == nil {
			errs = append(errs, errors.New("gateway: nil tool in the catalog"))
			continue
		}
		if seen[t.Name()] {
			errs = append(errs, fmt.Errorf("gateway: tool %q is in the catalog twice", t.Name()))
		}
		seen[t.Name()] = true
		if t.TaskSupport() == adapter.TaskRequired && c.Tasks == nil {
			errs = append(errs, fmt.Errorf("gateway: tool %q runs only as a task, and there is no tasks table (%s)", t.Name(), taskstore.EnvTable))
		}
		if c.Functions[t.Name()] == "" {
			errs = append(errs, fmt.Errorf("gateway: tool %q has no function in %s", t.Name(), EnvToolFunctions))
		}
	}
	var unknown []string
	for name := range c.Functions {
		if !seen[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		// A typo here would otherwise leave a tool silently unreachable.
		errs = append(errs, fmt.Errorf("gateway: %s names tools not in the catalog: %s", EnvToolFunctions, strings.Join(unknown, ", ")))
	}
	switch c.ToolsList {
	case "":
		c.ToolsList = ToolsHide
	case ToolsHide, ToolsShow:
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want hide or show", EnvToolsList, c.ToolsList))
	}
	if c.Signer == nil && len(c.KeySecrets) == 0 {
		errs = append(errs, fmt.Errorf("gateway: no call-token keys: set %s (tool=secretId,…) so that every forwarded call is signed", calltoken.EnvKeySecrets))
	}
	c.Path = cmp.Or(c.Path, defaultMCPPath)
	if !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, fmt.Errorf("gateway: path %q must start with /", c.Path))
	}
	c.InvokeTimeout = cmp.Or(c.InvokeTimeout, defaultTimeout)
	c.TaskRunWindow = cmp.Or(c.TaskRunWindow, defaultTaskRunWindow)
	// A forwarded call's token expires with its invoke, a task run's with
	// its run window: a longer one no function would accept (calltoken's
	// lifetime caps), so the gateway refuses to start rather than to sign.
	if c.InvokeTimeout > calltoken.MaxCallLifetime {
		errs = append(errs, fmt.Errorf("%s=%v: at most %v (a call token's longest life, Lambda's longest invocation)", EnvInvokeTimeout, c.InvokeTimeout, calltoken.MaxCallLifetime))
	}
	if c.TaskRunWindow > calltoken.MaxTaskLifetime {
		errs = append(errs, fmt.Errorf("%s=%v: at most %v (a task run token's longest life)", EnvTaskRunWindow, c.TaskRunWindow, calltoken.MaxTaskLifetime))
	}
	c.DeadlineReserve = cmp.Or(c.DeadlineReserve, defaultDeadlineRes)
	c.InvokeAttempts = cmp.Or(c.InvokeAttempts, defaultAttempts)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, defaultMaxBody)
	c.MaxBatch = cmp.Or(c.MaxBatch, defaultMaxBatch)
	c.MaxInvokes = cmp.Or(c.MaxInvokes, defaultMaxInvokes)
	c.MaxInvokesPerRequest = cmp.Or(c.MaxInvokesPerRequest, defaultMaxReqInv)
	c.MaxTasksPerCaller = cmp.Or(c.MaxTasksPerCaller, defaultMaxTasksPer)
	c.MaxTasks = cmp.Or(c.MaxTasks, defaultMaxTasks)
	if c.MaxBatch < 0 || c.MaxInvokes < 0 || c.MaxInvokesPerRequest < 0 || c.MaxTasksPerCaller < 0 || c.MaxTasks < 0 {
		errs = append(errs, errors.New("gateway: MaxBatch, MaxInvokes, MaxInvokesPerRequest, MaxTasksPerCaller and MaxTasks must be positive"))
	}
	c.InlineResultBytes = cmp.Or(c.InlineResultBytes, defaultInlineResult)
	c.ResultLinkTTL = cmp.Or(c.ResultLinkTTL, defaultLinkTTL)
	if c.ResultLinkTTL > maxLinkTTL || c.ResultLinkTTL < time.Second {
		errs = append(errs, fmt.Errorf("%s=%v: want 1s to %v (a presigned URL's longest life)", EnvResultLinkTTL, c.ResultLinkTTL, maxLinkTTL))
	}
	c.ArgumentLimits = c.ArgumentLimits.withDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.ServerName = cmp.Or(c.ServerName, "mcpfn-gateway")
	c.ServerVersion = cmp.Or(c.ServerVersion, "0.1.0")
	return errors.Join(errs...)
}
