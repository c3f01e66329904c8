package localtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/audit/viewer"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/ddbcrc"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/ddbproxy"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/otlpstandin"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
	"github.com/mcpfn/mcpfn/internal/toolcache"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
	"github.com/mcpfn/mcpfn/taskstore"
	"github.com/mcpfn/mcpfn/wire"
)

// tasksTableID is the template's tasks table (taskstore): the stack gives
// its local name to every function and the gateway.
const tasksTableID = "TasksTable"

// Stack is a running local stack. Its methods are safe for concurrent use.
type Stack struct {
	cfg     Config
	root    string // the project's root
	tmpl    *samtemplate.Template
	cat     *catalog.File   // the project's catalog
	tools   []*adapter.Tool // the gateway's: the catalog's and Config.ExtraTools
	scopes  []string        // every scope the tools require: the READY token's
	dir     string          // absolute Config.Dir
	started time.Time
	ready   time.Duration

	rieBin    string
	rieClient *http.Client
	functions map[string]*function
	mu        sync.Mutex
	emus      []*emulator

	ddb        *dynamolocal.Server // nil with an external endpoint
	ddbURL     string              // the stack's endpoint: the enforcing proxy
	upstream   string              // DynamoDB Local's (or the given) endpoint
	ddbProxy   *ddbproxy.Proxy
	ddbSrv     *http.Server
	tables     map[string]string // logical ID → local name
	auditTable string

	// secrets stands in for Secrets Manager: every call key of the
	// template (and one per fixture function) lives there.
	secrets *secretsstandin.Server

	// iam is who holds which key and what each may do (iam.go).
	iam *enforcement

	// s3 is the S3 stand-in behind its enforcing front (s3.go).
	s3 *s3Wiring

	xray     *xraystandin.Daemon
	xrayFile *os.File
	// otlp receives the OpenTelemetry spans (MCPFN_TRACING=both locally)
	// and writes otlp.jsonl.
	otlp     *otlpstandin.Receiver
	otlpFile *os.File
	iss      *issuer
	token    string

	invokeSrv *http.Server
	invokeURL string
	// gwProc is the gateway, a process of its own (gateway.go).
	gwProc *gatewayProcess
	mcpURL string
	// The AgentCore Gateway stand-in (agentcore.go), when the template
	// declares a gateway.
	agentCore *agentCoreWiring
	acSrv     *http.Server
	acURL     string
	acLog     *os.File
	// The audit viewer over the audit table and xray.jsonl.
	viewerSrv *http.Server
	viewerURL string
	ddbLog    *os.File
	// routerLog records what the Invoke API answered with a
	// ServiceException and why (logs/InvokeAPI.log).
	routerLog *slog.Logger
	routerF   *os.File
	// streams and async serve InvokeWithResponseStream (stream.go) and
	// InvocationType Event (async.go).
	streams streams
	async   *asyncRuns

	closeOnce sync.Once
	closeErr  error
}

// Start builds and starts the stack and returns once the gateway serves
// MCP. On error everything already started is stopped again.
func Start(ctx context.Context, cfg Config) (st *Stack, err error) {
	cfg.defaults()
	// Progress comes from the builds' goroutine and the installs too.
	cfg.Stdout = &lockedWriter{w: cfg.Stdout}
	s := &Stack{cfg: cfg, started: time.Now(), functions: map[string]*function{}}
	s.async = newAsyncRuns(s)
	defer func() {
		if err != nil {
			_ = s.Close()
			st = nil
		}
	}()
	s.rieClient = &http.Client{Transport: &http.Transport{
		// One connection per emulator; an emulator serves one call at a time.
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Minute,
	}}

	if err := s.loadProject(); err != nil {
		return nil, err
	}
	tmpl := s.tmpl
	if s.dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, err
	}
	binDir := cfg.BinDir
	if binDir == "" {
		binDir = filepath.Join(s.dir, "bin")
	}
	if binDir, err = filepath.Abs(binDir); err != nil {
		return nil, err
	}
	for _, d := range []string{s.dir, binDir, filepath.Join(s.dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("localtest: %w", err)
		}
	}

	// Bind the TCP listeners first: a port in use fails the start before
	// anything slow has been done.
	mcpLn, err := net.Listen("tcp", cfg.MCPAddr)
	if err != nil {
		return nil, fmt.Errorf("localtest: MCP address (%s to move it): %w", EnvMCPAddr, err)
	}
	// The gateway's process gets its own copy (startGateway).
	defer mcpLn.Close()
	invokeLn, err := net.Listen("tcp", cfg.InvokeAddr)
	if err != nil {
		return nil, fmt.Errorf("localtest: Invoke API address (%s to move it): %w", EnvInvokeAddr, err)
	}
	defer closeUnlessServed(invokeLn, &s.invokeSrv)
	s.invokeURL = "http://" + invokeLn.Addr().String()
	// The AgentCore Gateway stand-in, when the template has a gateway.
	if s.agentCore, err = agentCoreFromTemplate(tmpl); err != nil {
		return nil, err
	}
	var acLn net.Listener
	if s.agentCore != nil {
		if acLn, err = net.Listen("tcp", cfg.AgentCoreAddr); err != nil {
			return nil, fmt.Errorf("localtest: AgentCore front address (%s to move it): %w", EnvAgentCoreAddr, err)
		}
		defer closeUnlessServed(acLn, &s.acSrv)
		s.acURL = "http://" + acLn.Addr().String() + "/mcp"
	}
	s.mcpURL = "http://" + mcpLn.Addr().String() + "/mcp"
	viewerLn, err := net.Listen("tcp", cfg.ViewerAddr)
	if err != nil {
		return nil, fmt.Errorf("localtest: audit viewer address (%s to move it): %w", EnvViewerAddr, err)
	}
	defer closeUnlessServed(viewerLn, &s.viewerSrv)
	s.viewerURL = "http://" + viewerLn.Addr().String() + "/"
	ddbAddr := cfg.DynamoDBAddr
	if cfg.DynamoDBEndpoint != "" {
		ddbAddr = "127.0.0.1:0"
	}
	ddbLn, err := net.Listen("tcp", ddbAddr)
	if err != nil {
		return nil, fmt.Errorf("localtest: DynamoDB address (%s to move it): %w", EnvDynamoDBAddr, err)
	}
	defer closeUnlessServed(ddbLn, &s.ddbSrv)
	s.ddbURL = "http://" + ddbLn.Addr().String()
	s3Ln, err := s.listenS3()
	if err != nil {
		return nil, err
	}
	defer func() {
		if s.s3.srv == nil {
			s3Ln.Close()
		}
	}()

	if s.xray, err = xraystandin.Listen(cfg.XRayAddr); err != nil {
		return nil, fmt.Errorf("localtest: X-Ray address (%s to move it): %w", EnvXRayAddr, err)
	}
	if s.xrayFile, err = os.Create(s.XRayPath()); err != nil {
		return nil, fmt.Errorf("localtest: %w", err)
	}
	s.xray.SetOutput(s.xrayFile)
	if s.otlp, err = otlpstandin.Listen(cfg.OTLPAddr); err != nil {
		return nil, fmt.Errorf("localtest: OTLP address (%s to move it): %w", EnvOTLPAddr, err)
	}
	if s.otlpFile, err = os.Create(s.OTLPPath()); err != nil {
		return nil, fmt.Errorf("localtest: %w", err)
	}
	s.otlp.SetOutput(s.otlpFile)
	s.logf("OTLP receiver at %s, spans in %s", s.otlp.URL(), s.OTLPPath())

	if s.secrets, err = secretsstandin.Start(cfg.SecretsAddr); err != nil {
		return nil, fmt.Errorf("localtest: Secrets Manager stand-in (%s to move it): %w", EnvSecretsAddr, err)
	}
	s.secrets.AllowHosts(cfg.InvokeAllowedHosts...)
	for _, id := range tmpl.LogicalIDs(typeSecret) {
		// As GenerateSecretString does on deployment.
		s.secrets.Generate(id, 64)
	}

	// Resolve the template: table names, the gateway's environment (which
	// names the tool functions) and every function's.
	names := newLocalNames(tmpl, cfg.DynamoDBEndpoint != "")
	s.tables = names.tables
	gwEnv, err := names.environment(gatewayID)
	if err != nil {
		return nil, err
	}
	toolFns, err := gateway.ParseToolFunctions(gwEnv[gateway.EnvToolFunctions])
	if err != nil {
		return nil, err
	}
	toolOf := map[string]string{}
	for tool, fn := range toolFns {
		toolOf[localFunctionName(fn)] = tool
	}
	specs := cfg.Functions
	if specs == nil {
		var skipped []string
		if specs, skipped, err = names.templateFunctions(toolOf, s.cat, filepath.Join(s.root, catalog.FileName)); err != nil {
			return nil, err
		}
		for _, id := range skipped {
			s.logf("not run: %s (no Go main package at its CodeUri; the stack builds tools, mcpfn's functions and Go functions of your own)", id)
		}
		for i := range specs {
			specs[i].EventInvoke = names.eventInvokeConfig(specs[i].LogicalID)
		}
	}
	globalEnv, err := names.commonEnvironment()
	if err != nil {
		return nil, err
	}
	for i := range specs {
		// A function the template gives no key (a test's own spec) gets
		// one, as a deployment would have to.
		if sp := &specs[i]; sp.Tool != "" && sp.Env[calltoken.EnvKeySecret] == "" {
			sp.Env = withKeySecret(s.secrets, sp.Name, sp.Env)
		}
	}
	for _, x := range cfg.ExtraFunctions {
		// A fixture gets what every generated function gets (the audit
		// and tasks tables, …), as it would if it were a tool of the
		// template.
		env := map[string]string{}
		for k, v := range globalEnv {
			env[k] = v
		}
		for k, v := range x.Env {
			env[k] = v
		}
		x.Env = env
		if x.Tool != "" && x.Env[calltoken.EnvKeySecret] == "" {
			x.Env = withKeySecret(s.secrets, x.Name, x.Env)
		}
		specs = append(specs, x)
	}
	s.auditTable = globalEnv[audit.EnvTable]

	// Every function, the gateway and the AgentCore front get their
	// role's credentials; every AWS call they make is checked against the
	// template's IAM.
	if err := s.setUpIAM(specs, names); err != nil {
		return nil, err
	}
	s.secrets.SetGuard(s.guardSecrets)
	if err := s.startS3(s3Ln, names); err != nil {
		return nil, err
	}

	// What the stack runs besides Go code comes from the per-user cache,
	// installed there on a first run (internal/toolcache), never built
	// through the current module's go.mod.
	tools, err := toolcache.Default(cfg.Stdout)
	if err != nil {
		return nil, err
	}

	// Build while DynamoDB Local's JVM starts: both take seconds and
	// neither needs the other.
	var jobs []buildJob
	for i := range specs {
		sp := &specs[i]
		if sp.Name == "" || sp.Package == "" {
			return nil, fmt.Errorf("localtest: function spec %+v needs a Name and a Package", *sp)
		}
		if s.functions[sp.Name] != nil {
			return nil, fmt.Errorf("localtest: function %s is defined twice", sp.Name)
		}
		if sp.Timeout <= 0 {
			sp.Timeout = 10
		}
		if sp.MemorySize <= 0 {
			sp.MemorySize = 256
		}
		fnBin := filepath.Join(binDir, sp.Name)
		s.functions[sp.Name] = &function{stack: s, spec: *sp, binDir: fnBin, bootstrap: filepath.Join(fnBin, "bootstrap")}
		jobs = append(jobs, buildJob{pkg: sp.Package, out: filepath.Join(fnBin, "bootstrap"), lambda: true, tags: withTracingFlavour(sp.BuildTags), stripped: sp.Stripped})
	}
	jobs = append(jobs, s.gatewayBuild(binDir))
	buildDone := make(chan error, 1)
	buildCtx, cancelBuild := context.WithCancel(ctx)
	defer cancelBuild()
	go func() {
		ctx := buildCtx
		rie, err := tools.Emulator(ctx)
		if err != nil {
			buildDone <- err
			return
		}
		s.rieBin = rie
		s.logf("building %d functions and the gateway into %s", len(jobs)-1, binDir)
		buildStart := time.Now()
		if err := buildAll(ctx, s.root, binDir, jobs); err != nil {
			buildDone <- err
			return
		}
		s.logf("built %d functions and the gateway (%v)", len(jobs)-1, time.Since(buildStart).Round(time.Millisecond))
		buildDone <- nil
	}()

	ddbStart := time.Now()
	if err := s.startDynamoDB(ctx, tools, ddbLn); err != nil {
		cancelBuild()
		<-buildDone
		return nil, err
	}
	s.logf("DynamoDB at %s with tables %s (%v)", s.ddbURL, strings.Join(sortedValues(s.tables), ", "), time.Since(ddbStart).Round(time.Millisecond))
	if err := <-buildDone; err != nil {
		return nil, err
	}
	if cfg.Functions == nil {
		// What runs is what deploys: the functions just built declare
		// the tools the catalog and the template were generated from.
		if err := s.checkCurrent(ctx); err != nil {
			return nil, err
		}
	}

	if s.iss, err = startIssuer(cfg.IssuerAddr, s.scopes); err != nil {
		return nil, fmt.Errorf("localtest: JWT issuer (%s to move it): %w", EnvIssuerAddr, err)
	}
	claims := map[string]any{"sub": DemoSubject, "client_id": DemoClientID}
	if len(s.scopes) > 0 {
		claims["scope"] = strings.Join(s.scopes, " ")
	}
	if s.token, err = s.MintToken(claims); err != nil {
		return nil, err
	}

	if s.agentCore != nil {
		if f := s.functions[s.agentCore.interceptor]; f != nil {
			// As the gateway's: the interceptor verifies tokens of the
			// local issuer, for the local audience.
			f.spec.Env[gateway.EnvJWTIssuer] = s.iss.url
			f.spec.Env[gateway.EnvJWTAudience] = Audience
			f.spec.Env[gateway.EnvJWTJWKSURL] = s.iss.jwksURL()
		}
	}
	for _, f := range s.functions {
		if err := s.prepareFunction(f); err != nil {
			return nil, err
		}
	}
	warmStart := time.Now()
	if err := s.warmAll(ctx); err != nil {
		return nil, err
	}
	s.logf("%d emulators per function warm (%v)", cfg.PoolSize, time.Since(warmStart).Round(time.Millisecond))

	if s.routerF, err = os.OpenFile(s.LogPath("InvokeAPI"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("localtest: %w", err)
	}
	s.routerLog = slog.New(slog.NewJSONHandler(s.routerF, nil))
	s.invokeSrv = &http.Server{Handler: router{s}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.invokeSrv.Serve(invokeLn) }()

	if err := s.startGateway(ctx, gwEnv, toolFns, specs, mcpLn); err != nil {
		return nil, err
	}
	if s.agentCore != nil {
		if err := s.startAgentCoreFront(ctx, acLn); err != nil {
			return nil, err
		}
	}
	if err := s.startViewer(viewerLn); err != nil {
		return nil, err
	}
	if err := s.writeKeys(); err != nil {
		return nil, err
	}
	s.ready = time.Since(s.started)
	if s.acURL != "" {
		s.logf("AgentCore Gateway front at %s (interceptor %s)", s.acURL, s.agentCore.interceptor)
	}
	s.logf("gateway at %s (ready after %v)", s.mcpURL, s.ready.Round(time.Millisecond))
	return s, nil
}

// closeUnlessServed closes a listener that Start did not hand to a server
// (Start failed before), so a failed start frees its ports.
func closeUnlessServed(ln net.Listener, srv **http.Server) {
	if *srv == nil {
		ln.Close()
	}
}

func (s *Stack) logRouter(args ...any) {
	s.routerLog.Warn("mcpfn-local: Invoke API failure", args...)
}

func (s *Stack) logf(format string, args ...any) {
	fmt.Fprintf(s.cfg.Stdout, "mcpfn local: "+format+"\n", args...)
}

// lockedWriter keeps concurrent progress lines whole and lets a caller's
// writer be one that is not safe for concurrent use.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// startDynamoDB starts DynamoDB Local from the cache (or adopts the given
// endpoint) and creates the template's tables.
func (s *Stack) startDynamoDB(ctx context.Context, tools *toolcache.Cache, ln net.Listener) error {
	if ep := strings.TrimRight(s.cfg.DynamoDBEndpoint, "/"); ep != "" {
		s.upstream = ep
	} else {
		var err error
		if s.ddbLog, err = os.OpenFile(s.LogPath("DynamoDBLocal"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644); err != nil {
			return fmt.Errorf("localtest: %w", err)
		}
		jarDir, err := tools.DynamoDBLocal(ctx)
		if err != nil {
			return fmt.Errorf("%w\n(%s uses a running DynamoDB instead)", err, EnvDynamoDBEndpoint)
		}
		s.logf("starting DynamoDB Local")
		// On a free port behind the proxy: the functions, the gateway and
		// the operator reach it through DynamoDBAddr only.
		srv, err := dynamolocal.Start(ctx, dynamolocal.Options{JarDir: jarDir, Stdout: s.ddbLog, MaxHeap: s.cfg.DynamoDBHeap})
		if err != nil {
			return fmt.Errorf("%w\n(%s uses a running DynamoDB instead)", err, EnvDynamoDBEndpoint)
		}
		s.ddb, s.upstream = srv, srv.Endpoint()
	}
	s.ddbProxy = &ddbproxy.Proxy{
		Upstream: s.upstream, Authority: s.iam.auth, UpstreamCredentials: credentialsOf(s.iam.operator),
		Refuse: s.refuseBrowser,
		Denied: func(who, action, resource, msg string) { s.iam.denied("dynamodb", who, action, resource, msg) },
	}
	s.ddbSrv = &http.Server{Handler: s.ddbProxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.ddbSrv.Serve(ln) }()
	// Tables are the operator's to create, as `sam deploy` creates them.
	client := s.dynamoDBAs(s.iam.operator, s.upstream)
	for id, name := range s.tables {
		in, err := s.tmpl.TableInput(id, name)
		if err != nil {
			return err
		}
		if err := createTable(ctx, client, in); err != nil {
			return err
		}
	}
	return nil
}

// createTable creates a table and waits until it and its indexes are
// ACTIVE (at once on DynamoDB Local).
func createTable(ctx context.Context, c *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	if _, err := c.CreateTable(ctx, in); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return fmt.Errorf("localtest: creating table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		if err != nil {
			return fmt.Errorf("localtest: describing table %s: %w", aws.ToString(in.TableName), err)
		}
		active := out.Table.TableStatus == types.TableStatusActive
		for _, g := range out.Table.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == types.IndexStatusActive
		}
		if active {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// prepareFunction opens the function's log and builds its environment:
// the template's variables plus what Lambda itself sets, and what points
// the SDKs at the local services. Nothing else of the caller's environment
// is passed on (the RIE hands its whole environment to the function), so a
// developer's AWS profile can never reach a function.
func (s *Stack) prepareFunction(f *function) error {
	f.logPath = s.LogPath(f.spec.Name)
	lf, err := os.OpenFile(f.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	f.log = lf
	f.max = s.cfg.MaxConcurrency
	if f.spec.MaxConcurrency > 0 {
		f.max = f.spec.MaxConcurrency
	}
	id := s.iam.functions[f.spec.Name]
	if id == nil {
		return fmt.Errorf("localtest: function %s has no role", f.spec.Name)
	}
	env := s.lambdaEnvironment(f.spec.Name, credentialsOf(id), f.spec.Timeout, f.spec.MemorySize)
	env["_HANDLER"] = "bootstrap"
	if !audit.OTelBuilt && !slices.Contains(f.spec.BuildTags, otelTag) {
		env[audit.EnvTracing] = audit.TracingXRay
	}
	// The frames' copies for streamed invokes (stream.go), and the tasks
	// table where the template has one.
	env[wire.EnvLocalStreamURL] = s.streamURL()
	if t := s.tables[tasksTableID]; t != "" {
		env[taskstore.EnvTable] = t
	}
	maps.Copy(env, s.s3.environment())
	for k, v := range f.spec.Env {
		env[k] = v
	}
	for _, k := range sortedKeys(env) {
		f.environ = append(f.environ, k+"="+env[k])
	}
	return nil
}

// lambdaEnvironment is what Lambda sets for function name running as the
// role whose session creds are, and what points the SDKs at the local
// services: the base of every function's environment and the gateway's.
// Nothing else of the caller's environment is passed on, so a developer's
// AWS profile can never reach a function.
func (s *Stack) lambdaEnvironment(name string, creds aws.Credentials, timeout, memory int) map[string]string {
	env := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"TZ":                              "UTC",
		"LANG":                            "C.UTF-8",
		"AWS_LAMBDA_FUNCTION_NAME":        name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(timeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(memory),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      "local",
		"AWS_REGION":                      localRegion,
		"AWS_DEFAULT_REGION":              localRegion,
		// The role's session, as Lambda hands it to a function.
		"AWS_ACCESS_KEY_ID":                creds.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY":            creds.SecretAccessKey,
		"AWS_SESSION_TOKEN":                creds.SessionToken,
		"AWS_CONFIG_FILE":                  os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE":      os.DevNull,
		"AWS_EC2_METADATA_DISABLED":        "true",
		"AWS_ENDPOINT_URL_DYNAMODB":        s.ddbURL,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": s.secrets.URL,
		"AWS_XRAY_DAEMON_ADDRESS":          s.xray.Addr(),
		"AWS_XRAY_CONTEXT_MISSING":         "LOG_ERROR",
		// Locally every span goes both ways, with the same ids, when the
		// functions link OpenTelemetry (withTracingFlavour).
		audit.EnvTracing:      audit.TracingBoth,
		audit.EnvOTLPEndpoint: s.otlp.URL(),
	}
	return env
}

// otelTag is the build tag that links the OpenTelemetry emitter (audit).
const otelTag = "mcpfn_otel"

// withTracingFlavour returns a function's build tags with mcpfn_otel added
// when this process links OpenTelemetry itself (built with -tags
// mcpfn_otel, as `make test` runs this package's tests): the stack's
// functions are then the tracing flavour and send their spans to the OTLP
// stand-in, as the gateway then does. Otherwise they are built as
// deployed by default, X-Ray only (docs/tracing.md).
func withTracingFlavour(tags []string) []string {
	if !audit.OTelBuilt || slices.Contains(tags, otelTag) {
		return tags
	}
	return append(slices.Clip(tags), otelTag)
}

// warmAll starts PoolSize emulators of every function, all functions at
// once.
func (s *Stack) warmAll(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(s.functions))
	for _, f := range s.functions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.warm(ctx, min(s.cfg.PoolSize, f.max)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (s *Stack) track(e *emulator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emus = append(s.emus, e)
}

// startViewer serves the audit viewer over the stack's audit table (through
// the stack's DynamoDB endpoint, as the operator) and the X-Ray
// stand-in's xray.jsonl. Loopback Host names only, as `mcpfn-audit serve`.
func (s *Stack) startViewer(ln net.Listener) error {
	if s.auditTable == "" {
		s.viewerURL = ""
		ln.Close()
		return nil
	}
	v, err := viewer.New(viewer.Config{
		Auditor:  audit.New(audit.Config{Table: s.auditTable, Client: s.DynamoDB()}),
		Segments: viewer.FileSegments(s.XRayPath()),
	})
	if err != nil {
		return err
	}
	s.viewerSrv = &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.viewerSrv.Serve(ln) }()
	return nil
}

// ViewerURL is the audit viewer's address, e.g. http://127.0.0.1:8083/
// ("" when the template has no audit table).
func (s *Stack) ViewerURL() string { return s.viewerURL }

// MCPURL is the gateway's MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
func (s *Stack) MCPURL() string { return s.mcpURL }

// Token is a bearer JWT for the local user (subject demo-user, every scope
// the tools require: [Stack.Scopes]), valid for 12 hours.
func (s *Stack) Token() string { return s.token }

// MintToken signs a JWT with the local issuer's key. iss, aud, iat and exp
// default to the issuer, the gateway's audience, now and now + 12 h; set a
// claim to nil to leave it out. Tests use it for other users and scopes,
// and for expired or misaddressed tokens.
func (s *Stack) MintToken(claims map[string]any) (string, error) { return s.iss.mint(claims) }

// Issuer is the local JWT issuer's URL (its "iss"); its JWKS is at
// Issuer()+"/.well-known/jwks.json".
func (s *Stack) Issuer() string { return s.iss.url }

// InvokeURL is the Lambda Invoke API's base URL: set it as
// AWS_ENDPOINT_URL_LAMBDA (or a client's BaseEndpoint).
func (s *Stack) InvokeURL() string { return s.invokeURL }

// DynamoDBEndpoint is the stack's DynamoDB endpoint, which everyone uses:
// the proxy that checks each request's signature and IAM before DynamoDB
// Local sees it. Another stack given it as its DynamoDBEndpoint shares the
// tables (its proxy signs as this stack's operator).
func (s *Stack) DynamoDBEndpoint() string { return s.ddbURL }

// DynamoDB returns a client for DynamoDBEndpoint with the operator's
// credentials (OperatorKeyID), built from explicit settings only (never the
// caller's AWS profile).
func (s *Stack) DynamoDB() *dynamodb.Client { return s.dynamoDBAs(s.iam.operator, s.ddbURL) }

// DynamoDBAs is a client for DynamoDBEndpoint signing with creds (a
// function's: FunctionCredentials).
func (s *Stack) DynamoDBAs(creds aws.Credentials) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: localRegion, BaseEndpoint: aws.String(s.ddbURL),
		Credentials: credentials.StaticCredentialsProvider{Value: creds},
	}, ddbcrc.Option)
}

func (s *Stack) dynamoDBAs(id *iam.Identity, endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       localRegion,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  staticCredentials(id),
	}, ddbcrc.Option)
}

func staticCredentials(id *iam.Identity) aws.CredentialsProvider {
	return credentials.StaticCredentialsProvider{Value: credentialsOf(id)}
}

// XRayPath is the file the X-Ray stand-in appends every segment document
// to, one JSON object per line.
func (s *Stack) XRayPath() string { return filepath.Join(s.dir, "xray.jsonl") }

// OTLPPath is the file the OTLP receiver stand-in appends every span to,
// one JSON line each (otlpstandin.Span).
func (s *Stack) OTLPPath() string { return filepath.Join(s.dir, "otlp.jsonl") }

// OTLP is the OTLP receiver stand-in, for tests that look at spans.
func (s *Stack) OTLP() *otlpstandin.Receiver { return s.otlp }

// OTLPURL is the receiver's base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
func (s *Stack) OTLPURL() string { return s.otlp.URL() }

// XRay is the X-Ray daemon stand-in, for tests that wait for segments.
func (s *Stack) XRay() *xraystandin.Daemon { return s.xray }

// XRayAddr is the stand-in's UDP address (AWS_XRAY_DAEMON_ADDRESS).
func (s *Stack) XRayAddr() string { return s.xray.Addr() }

// AuditTable is the local name of the audit table.
func (s *Stack) AuditTable() string { return s.auditTable }

// Table returns the local name of the table with the given logical ID
// (e.g. "NotesTable").
func (s *Stack) Table(logicalID string) string { return s.tables[logicalID] }

// LogPath is the file a function's stdout and stderr go to
// (Dir/logs/<function>.log); the gateway's log is LogPath("GatewayFunction").
func (s *Stack) LogPath(function string) string {
	return filepath.Join(s.dir, "logs", function+".log")
}

// Functions returns the names of the stack's functions.
func (s *Stack) Functions() []string { return sortedKeys(s.functions) }

// ReadyTime is how long Start took.
func (s *Stack) ReadyTime() time.Duration { return s.ready }

// ReadyLine is the line `make local` prints once the stack is up. The
// issuer is there for `mcpfn-audit -issuer … caller demo-user`: a caller is
// its subject and its issuer.
func (s *Stack) ReadyLine() string {
	return "READY mcp=" + s.mcpURL + " token=" + s.token
}

// Processes returns the pids of the gateway, of every emulator the stack
// has started and of every process those started (the functions'
// bootstraps), alive or not.
func (s *Stack) Processes() []int {
	s.mu.Lock()
	emus := append([]*emulator(nil), s.emus...)
	s.mu.Unlock()
	var out []int
	if pid := s.gwProc.pid(); pid != 0 {
		out = append(out, pid)
	}
	for _, e := range emus {
		out = append(out, e.pids()...)
	}
	return out
}

// PeakRSS returns the largest peak resident set size (VmHWM, bytes) among
// the living bootstrap processes of a function, and how many there were.
func (s *Stack) PeakRSS(function string) (peak int64, n int) {
	f := s.functions[function]
	if f == nil {
		return 0, 0
	}
	for _, e := range f.emulators() {
		for _, p := range e.pids()[1:] {
			if r := peakRSS(p); r > 0 {
				n++
				peak = max(peak, r)
			}
		}
	}
	return peak, n
}

// Close stops every server and process of the stack and waits for them.
// It is idempotent.
func (s *Stack) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.gwProc.stop()
		if s.acSrv != nil {
			_ = s.acSrv.Shutdown(ctx)
		}
		if s.viewerSrv != nil {
			_ = s.viewerSrv.Close()
		}
		if s.invokeSrv != nil {
			_ = s.invokeSrv.Close()
		}
		if s.ddbSrv != nil {
			_ = s.ddbSrv.Close()
		}
		if err := s.s3.close(); err != nil {
			errs = append(errs, err)
		}
		// Queued events are dropped; killing the emulators ends the runs
		// in flight; an emulator a run started meanwhile is killed too.
		s.async.stop(s.killEmulators)
		s.killEmulators()
		if s.iss != nil {
			_ = s.iss.close()
		}
		if s.secrets != nil {
			_ = s.secrets.Close()
		}
		if s.xray != nil {
			_ = s.xray.Close()
		}
		if s.otlp != nil {
			_ = s.otlp.Close()
		}
		if s.ddb != nil {
			errs = append(errs, s.ddb.Stop())
		}
		for _, f := range s.functions {
			if f.log != nil {
				_ = f.log.Close()
			}
		}
		if s.iam != nil && s.iam.logFile != nil {
			_ = s.iam.logFile.Close()
		}
		for _, f := range []*os.File{s.xrayFile, s.otlpFile, s.acLog, s.ddbLog, s.routerF} {
			if f != nil {
				_ = f.Close()
			}
		}
		s.rieClient.CloseIdleConnections()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// killEmulators kills every emulator of the stack (a dead one is left
// alone).
func (s *Stack) killEmulators() {
	s.mu.Lock()
	emus := append([]*emulator(nil), s.emus...)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range emus {
		wg.Go(e.kill)
	}
	wg.Wait()
}

// withKeySecret gives function name a call-key secret of its own in the
// stand-in and returns env with MCPFN_CALL_KEY_SECRET naming it.
func withKeySecret(sm *secretsstandin.Server, name string, env map[string]string) map[string]string {
	id := name + "CallKey"
	sm.Generate(id, 64)
	out := map[string]string{calltoken.EnvKeySecret: secretsstandin.ARN(id)}
	for k, v := range env {
		if k != calltoken.EnvKeySecret {
			out[k] = v
		}
	}
	return out
}

// SecretsManager returns a Secrets Manager client for the stack's stand-in
// with the operator's credentials (which rotate keys, PutSecretValue, but
// are denied their values by the keys' resource policies, as on AWS).
func (s *Stack) SecretsManager() *secretsmanager.Client { return s.secretsManagerAs(s.iam.operator) }

// SecretsManagerAs is a client for the stand-in signing with creds.
func (s *Stack) SecretsManagerAs(creds aws.Credentials) *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{
		Region: localRegion, BaseEndpoint: aws.String(s.secrets.URL),
		Credentials: credentials.StaticCredentialsProvider{Value: creds},
	})
}

func (s *Stack) secretsManagerAs(id *iam.Identity) *secretsmanager.Client {
	return s.SecretsManagerAs(credentialsOf(id))
}

// SecretsURL is the Secrets Manager stand-in's endpoint.
func (s *Stack) SecretsURL() string { return s.secrets.URL }

// KeySecret is the id of function's call-key secret ("" for none): a second
// gateway over the stack's Invoke API signs with it.
func (s *Stack) KeySecret(function string) string {
	if f := s.functions[function]; f != nil {
		return f.spec.Env[calltoken.EnvKeySecret]
	}
	return ""
}

// Secrets is the Secrets Manager stand-in (tests rotate keys through it).
func (s *Stack) Secrets() *secretsstandin.Server { return s.secrets }
