package localtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/localgateway"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/taskstore"
)

// gatewayPackage is the GatewayFunction's code: mcpfn's own, built with the
// project's catalog beside it, as `mcpfn build GatewayFunction` packages it.
const gatewayPackage = "github.com/mcpfn/mcpfn/cmd/mcpfn-gateway"

// gatewayProcess is the gateway's process: mcpfn-gateway in its local mode
// (internal/localgateway), in a process of its own as on Lambda, so that its
// memory is its own and a gateway that fails to start says so in its log.
type gatewayProcess struct {
	bin     string // the built bootstrap
	logPath string
	log     *os.File
	cmd     *exec.Cmd
	exited  chan struct{}
	// stopping is closed by stop: an exit after it is no news.
	stopping chan struct{}
}

// gatewayBuild is the gateway's build job: the deployed build, in the
// stack's tracing flavour (withTracingFlavour), as the functions.
func (s *Stack) gatewayBuild(binDir string) buildJob {
	s.gwProc = &gatewayProcess{bin: filepath.Join(binDir, gatewayID, "bootstrap"), logPath: s.LogPath(gatewayID)}
	return buildJob{pkg: gatewayPackage, out: s.gwProc.bin, lambda: true, tags: withTracingFlavour(nil)}
}

// startGateway starts the gateway's process, configured from the template's
// GatewayFunction environment (gatewayEnvironment) and serving ln, which
// the stack bound; it returns once the gateway serves.
func (s *Stack) startGateway(ctx context.Context, env map[string]string, toolFns map[string]string, specs []FunctionSpec, ln net.Listener) error {
	p := s.gwProc
	environ, err := s.gatewayEnvironment(env, toolFns, specs)
	if err != nil {
		return err
	}
	// The catalog the gateway serves: the project's, and the tests'
	// fixtures (Config.ExtraTools), in the stack's directory (the bin
	// directory may be shared by stacks with other fixtures).
	catDir := filepath.Join(s.dir, "gateway")
	if err := os.MkdirAll(catDir, 0o755); err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	catPath := filepath.Join(catDir, catalog.FileName)
	if err := s.writeGatewayCatalog(catPath); err != nil {
		return err
	}
	environ[catalog.EnvPath] = catPath

	lnFile, err := ln.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("localtest: the gateway's listener: %w", err)
	}
	defer lnFile.Close()
	// The stack's copy goes once the gateway has its own: a gateway that
	// dies then leaves no socket queueing connections nobody accepts.
	defer ln.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	defer readyR.Close()
	environ[localgateway.EnvListenFD] = "3" // ExtraFiles[0]
	environ[localgateway.EnvReadyFD] = "4"  // ExtraFiles[1]
	environ[localgateway.EnvTraceSegment] = gatewayID

	if p.log, err = os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		readyW.Close()
		return fmt.Errorf("localtest: %w", err)
	}
	p.cmd = exec.Command(p.bin)
	p.cmd.Dir = catDir
	for _, k := range sortedKeys(environ) {
		p.cmd.Env = append(p.cmd.Env, k+"="+environ[k])
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.ExtraFiles = []*os.File{lnFile, readyW}
	p.cmd.SysProcAttr = sysProcAttr()
	p.exited, p.stopping = make(chan struct{}), make(chan struct{})
	began := time.Now()
	err = startProcess(p.cmd, p.exited)
	readyW.Close() // the gateway holds the write end now
	if err != nil {
		return fmt.Errorf("localtest: starting the gateway: %w", err)
	}
	go p.watch(s)

	// The pipe says "ready" once the gateway serves, or ends without it
	// when the gateway exits first.
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(readyR).ReadString('\n')
		ready <- line == localgateway.ReadyLine
	}()
	select {
	case ok := <-ready:
		if ok {
			s.logf("gateway process %d serving (%v)", p.cmd.Process.Pid, time.Since(began).Round(time.Millisecond))
			return nil
		}
		<-p.exited
		return fmt.Errorf("localtest: the gateway exited before serving (%s), its log %s ends:\n%s", p.cmd.ProcessState, p.logPath, logTail(p.logPath, 2048))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch reports a gateway that exits while the stack runs.
func (p *gatewayProcess) watch(s *Stack) {
	<-p.exited
	select {
	case <-p.stopping:
	default:
		s.logf("the gateway exited (%s); see %s", p.cmd.ProcessState, p.logPath)
	}
}

// stop ends the gateway: SIGTERM, which lets it answer what is in flight
// for a moment, then SIGKILL.
func (p *gatewayProcess) stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	close(p.stopping)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	if p.log != nil {
		_ = p.log.Close()
	}
}

// pid is the gateway process's id (0 before it started).
func (p *gatewayProcess) pid() int {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// GatewayPID is the process id of the gateway (0 before it started).
func (s *Stack) GatewayPID() int { return s.gwProc.pid() }

// writeGatewayCatalog writes the catalog the gateway serves: the project's
// entries and one per Config.ExtraTools.
func (s *Stack) writeGatewayCatalog(path string) error {
	f := &catalog.File{Version: s.cat.Version, Tools: slices.Clone(s.cat.Tools)}
	fns := map[string]string{}
	for _, x := range s.cfg.ExtraFunctions {
		if x.Tool != "" {
			fns[x.Tool] = x.Name
		}
	}
	for _, t := range s.cfg.ExtraTools {
		f.Tools = append(f.Tools, catalog.Entry{Function: fns[t.Name()], Tool: t.Declaration()})
	}
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// gatewayEnvironment is the gateway process's environment: what Lambda
// sets for a function (lambdaEnvironment, with the gateway role's
// credentials, pointing the SDKs at the local services) and the gateway's
// settings (gatewaySettings).
func (s *Stack) gatewayEnvironment(env map[string]string, toolFns map[string]string, specs []FunctionSpec) (map[string]string, error) {
	settings, err := s.gatewaySettings(env, toolFns, specs)
	if err != nil {
		return nil, err
	}
	out := s.lambdaEnvironment(gatewayID, credentialsOf(s.iam.gateway), gatewayIntProperty(s, "Timeout", 30), gatewayIntProperty(s, "MemorySize", 512))
	if !audit.OTelBuilt {
		// Built as deployed by default, without OpenTelemetry
		// (withTracingFlavour).
		out[audit.EnvTracing] = audit.TracingXRay
	}
	out["AWS_ENDPOINT_URL_LAMBDA"] = s.invokeURL
	maps.Copy(out, s.s3.environment())
	maps.Copy(out, settings)
	return out, nil
}

// gatewaySettings are the template's GatewayFunction variables as the local
// gateway gets them, with what only makes sense deployed replaced: auth is
// jwt against the local issuer, the tables are the local ones, the host is
// the loopback listener, and the tool → function and tool → key maps
// include the fixtures. Every MCPFN_ variable the template sets must be one
// the stack knows, so a variable added to the template fails the local
// stack loudly instead of being silently ignored (local and deployed must
// not drift). Config.GatewayEnv joins the template's variables under the
// same check; its AWS_ENDPOINT_URL_LAMBDA points the gateway at another
// Invoke endpoint (a test's fault-injecting proxy in front of this one).
func (s *Stack) gatewaySettings(env map[string]string, toolFns map[string]string, specs []FunctionSpec) (map[string]string, error) {
	merged := map[string]string{}
	maps.Copy(merged, env)
	maps.Copy(merged, s.cfg.GatewayEnv)
	env = merged
	known := map[string]bool{
		gateway.EnvToolFunctions: true, gateway.EnvAuthMode: true, gateway.EnvJWTIssuer: true,
		gateway.EnvJWTAudience: true, gateway.EnvJWTJWKSURL: true, gateway.EnvIAMScopes: true,
		gateway.EnvAllowedHosts: true, gateway.EnvAllowedOrigins: true, gateway.EnvResourceURL: true,
		gateway.EnvInvokeTimeout: true, gateway.EnvMaxBodyBytes: true, gateway.EnvInvokeAttempts: true,
		gateway.EnvMaxBatch: true, gateway.EnvMCPPath: true, gateway.EnvListenAddr: true,
		gateway.EnvMaxInvokes: true, gateway.EnvMaxRequestInvokes: true, gateway.EnvIAMSessionSubjects: true,
		// The audit table: the gateway writes the rows of calls the
		// functions never saw, into the local table.
		audit.EnvTable: true, audit.EnvRetentionDays: true, audit.EnvEntityDimension: true,
		audit.EnvTracing:        true,
		calltoken.EnvKeySecrets: true, calltoken.EnvGrace: true,
		taskstore.EnvTable: true, taskstore.EnvTTL: true, taskstore.EnvPollIntervalMs: true,
		gateway.EnvTaskRunWindow: true,
		// The payloads bucket: its local name, in the S3 stand-in.
		samgen.EnvPayloadsBucket: true, gateway.EnvInlineResultBytes: true,
		gateway.EnvResultLinkTTL: true, gateway.EnvResultLinks: true,
		// The session key: the stack's Secrets Manager stand-in serves
		// every secret of the template.
		gateway.EnvSessionKeySecret: true,
	}
	var errs []error
	for _, k := range sortedKeys(env) {
		if strings.HasPrefix(k, "MCPFN_") && !known[k] {
			errs = append(errs, fmt.Errorf("localtest: template.yaml sets %s on the gateway and the local stack does not know how to apply it; teach localtest/gateway.go gatewayEnvironment", k))
		}
	}
	if p := env[gateway.EnvMCPPath]; p != "" && p != "/mcp" {
		errs = append(errs, fmt.Errorf("%s=%q: the local stack serves /mcp (DESIGN.md §5)", gateway.EnvMCPPath, p))
	}
	keySecrets, err := calltoken.ParseSecrets(env[calltoken.EnvKeySecrets])
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	out := maps.Clone(env)
	for _, k := range []string{gateway.EnvAllowedHosts, gateway.EnvResourceURL, gateway.EnvListenAddr, gateway.EnvMCPPath} {
		delete(out, k)
	}
	out[gateway.EnvAuthMode] = string(gateway.AuthJWT)
	out[gateway.EnvJWTIssuer] = s.iss.url
	out[gateway.EnvJWTAudience] = Audience
	out[gateway.EnvJWTJWKSURL] = s.iss.jwksURL()
	if _, ok := env[audit.EnvTable]; ok {
		out[audit.EnvTable] = s.auditTable
	}
	if t := s.tables[tasksTableID]; t != "" {
		out[taskstore.EnvTable] = t
	}
	// The template's tools and the fixtures', each to its function and key.
	fns := map[string]string{}
	for tool, fn := range toolFns {
		fns[tool] = fn
	}
	for _, sp := range specs {
		if sp.Tool != "" {
			fns[sp.Tool] = sp.Name
			keySecrets[sp.Tool] = sp.Env[calltoken.EnvKeySecret]
		}
	}
	out[gateway.EnvToolFunctions] = joinPairs(fns)
	out[calltoken.EnvKeySecrets] = joinPairs(keySecrets)
	return out, nil
}

// joinPairs writes a map as "k=v,k2=v2", sorted.
func joinPairs(m map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + m[k])
	}
	return b.String()
}

// gatewayIntProperty reads a literal integer property of the template's
// GatewayFunction (Timeout, MemorySize), def when absent.
func gatewayIntProperty(s *Stack, prop string, def int) int {
	r, ok := s.tmpl.Resource(gatewayID)
	if !ok {
		return def
	}
	switch v := r.Properties[prop].(type) {
	case int:
		return v
	case float64:
		return int(v)
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// logTail is the last n bytes of a log file, for a failure message.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(fi.Size()-n, 0)
	}
	b := make([]byte, n)
	k, _ := f.Read(b)
	return string(b[:k])
}
