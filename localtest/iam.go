package localtest

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/ddbproxy"
	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/localonly"
	"github.com/mcpfn/mcpfn/internal/s3front"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/internal/samiam"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
)

// The operator's credentials: the developer at the keyboard, with the
// account's every permission (as an administrator's own AWS credentials
// would be) — but not more than resource policies allow: a call key's
// policy denies the operator as it denies every principal it does not name.
// The stack's own clients (table creation, the audit viewer, Stack.DynamoDB)
// and commands run beside it use them; docs/local.md shows them.
const (
	OperatorKeyID  = "local"
	OperatorSecret = "local"
	operatorARN    = "arn:aws:iam::" + localAccount + ":user/mcpfn-local-operator"
)

// The services the stack enforces IAM on, and the operations of each it
// authorizes; every condition key a policy may use must be one the stack
// fills from a request or knows a local request never carries.
var (
	secretsOperations = []string{"GetSecretValue", "PutSecretValue"}
	// absentKeys are keys no local request carries: no Function URL
	// call, no service principal, no organization.
	absentKeys = []string{"lambda:FunctionUrlAuthType", "lambda:InvokedViaFunctionUrl", "aws:SourceArn", "aws:SourceAccount", "aws:PrincipalOrgID"}
)

// enforcement is the stack's IAM: who holds which key and what each may do.
type enforcement struct {
	auth      *iam.Authority
	operator  *iam.Identity
	functions map[string]*iam.Identity // by function name
	gateway   *iam.Identity
	agentCore *iam.Identity // AgentCore Gateway's role (nil without one)
	model     *samiam.Model
	log       *slog.Logger
	logFile   *os.File
}

// setUpIAM derives the template's IAM (internal/samiam) for the functions
// the stack runs and builds the authority every local service asks. A
// policy element, condition key or explicitly granted operation the stack
// cannot evaluate stops the start, named.
//
// A fixture tool function of a test (not in the template) gets the role a
// tool of that name would get: the template is generated again with the
// fixtures added to the catalog (samgen), so the gateway's grants, the
// fixtures' keys and their resource policies are the generator's too.
func (s *Stack) setUpIAM(specs []FunctionSpec, names *localNames) error {
	tmpl := s.tmpl
	if s.cfg.IAMTemplate != "" {
		t, err := samtemplate.Load(s.cfg.IAMTemplate)
		if err != nil {
			return err
		}
		tmpl = t
	}
	vals := samtemplate.Values{Refs: map[string]string{}, Attrs: map[string]string{}}
	for k, v := range names.vals.Refs {
		vals.Refs[k] = v
	}
	for k, v := range names.vals.Attrs {
		vals.Attrs[k] = v
	}
	// The logical id each function's role is derived under.
	roleOf := map[string]string{}
	var fixtures []catalog.Entry
	for _, sp := range specs {
		if _, ok := tmpl.Resource(sp.LogicalID); ok && sp.LogicalID != "" {
			roleOf[sp.Name] = sp.LogicalID
			continue
		}
		tool := sp.Tool
		if tool == "" && sp.RoleTool != nil {
			tool = sp.RoleTool.Name()
		}
		if tool == "" {
			continue // SAM's own policies only
		}
		if e, ok := catalogEntryOfTool(s.cat, tool); ok {
			if _, inTemplate := tmpl.Resource(e.Function); inTemplate && !slices.ContainsFunc(fixtures, func(f catalog.Entry) bool { return f.Tool.Name == tool }) {
				roleOf[sp.Name] = e.Function
				continue
			}
		}
		def := s.toolByName(tool)
		if sp.Tool == "" {
			def = sp.RoleTool
		}
		if def == nil {
			return fmt.Errorf("localtest: function %s: tool %s has no definition (Config.ExtraTools) to derive its role from", sp.Name, tool)
		}
		id := catalog.Prefix(tool) + "Function"
		roleOf[sp.Name] = id
		if !slices.ContainsFunc(fixtures, func(f catalog.Entry) bool { return f.Tool.Name == tool }) {
			// A role depends on the tool's name, tables and task support,
			// never on its schemas, which may be ones AgentCore's target
			// cannot express (the generator would refuse them).
			d := def.Declaration()
			d.InputSchema, d.OutputSchema = &jsonschema.Schema{Type: "object"}, nil
			fixtures = append(fixtures, catalog.Entry{Function: id, Package: sp.Package, Tool: d})
		}
		if key := sp.Env[calltoken.EnvKeySecret]; key != "" {
			vals.Refs[catalog.Prefix(tool)+"CallKey"] = key
		}
		if sp.Tool == "" {
			continue // not the tool's function: only its role
		}
		vals.Refs[id] = sp.Name
		vals.Attrs[id+".Arn"] = functionARN(sp.Name)
	}
	if len(fixtures) > 0 {
		src, err := os.ReadFile(tmpl.Path)
		if err != nil {
			return err
		}
		cat := &catalog.File{Version: s.cat.Version, Tools: append(slices.Clone(s.cat.Tools), fixtures...)}
		out, err := samgen.Generate(src, cat, "")
		if err != nil {
			return fmt.Errorf("localtest: the fixtures' roles: %w", err)
		}
		if tmpl, err = samtemplate.Parse(out); err != nil {
			return err
		}
		tmpl.Path = s.tmpl.Path
		for _, f := range fixtures {
			// A tool no function serves (only a role was asked for):
			// the names its generated region would have.
			if _, ok := vals.Attrs[f.Function+".Arn"]; !ok {
				vals.Refs[f.Function] = f.Function
				vals.Attrs[f.Function+".Arn"] = functionARN(f.Function)
			}
			if _, ok := vals.Refs[catalog.Prefix(f.Tool.Name)+"CallKey"]; !ok {
				vals.Refs[catalog.Prefix(f.Tool.Name)+"CallKey"] = secretsstandin.ARN(catalog.Prefix(f.Tool.Name) + "CallKey")
			}
		}
	}

	// Conditions as the parameters' defaults decide them, except that
	// what the stack runs is deployed: its functions, and the AgentCore
	// Gateway and everything of it when the template has one.
	conds, err := samiam.Conditions(tmpl, nil)
	if err != nil {
		return err
	}
	force := func(id string) {
		if r, ok := tmpl.Resource(id); ok {
			if c, ok := r.Attributes["Condition"].(string); ok {
				conds[c] = true
			}
		}
	}
	for _, sp := range specs {
		force(roleOf[sp.Name])
	}
	var acRole string
	if s.agentCore != nil {
		force(s.agentCore.gatewayID)
		gw, _ := tmpl.Resource(s.agentCore.gatewayID)
		acRole = getAttResource(gw.Properties["RoleArn"])
		force(acRole)
	}
	for name, v := range conds {
		vals.Refs[name] = fmt.Sprint(v)
	}
	model, err := samiam.Derive(tmpl, vals, localAccount)
	if err != nil {
		return fmt.Errorf("localtest: IAM enforcement: %w", err)
	}
	if err := checkEvaluable(model); err != nil {
		return err
	}

	e := &enforcement{auth: iam.NewAuthority(localRegion, localAccount), functions: map[string]*iam.Identity{}, model: model}
	for arn, p := range model.ResourcePolicies {
		e.auth.SetResourcePolicy(arn, p)
	}
	admin, err := iam.ParsePolicy("mcpfn-local-operator AdministratorAccess", iam.IdentityBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`)
	if err != nil {
		return err
	}
	e.operator = &iam.Identity{Name: "operator", Principal: iam.Principal{ARN: operatorARN, IAMARN: operatorARN, Account: localAccount},
		Credentials: iam.Credentials{AccessKeyID: OperatorKeyID, SecretAccessKey: OperatorSecret}, Policies: []*iam.Policy{admin}}
	e.auth.Add(e.operator)
	session := func(roleID, session string) (*iam.Identity, error) {
		role := model.Roles[roleID]
		if role == nil {
			return nil, fmt.Errorf("localtest: IAM enforcement: no role %s", roleID)
		}
		id := &iam.Identity{Name: session, Principal: iam.SessionPrincipal(role.ARN, session), Credentials: iam.NewSessionCredentials(), Policies: role.Policies}
		e.auth.Add(id)
		return id, nil
	}
	for _, sp := range specs {
		var id *iam.Identity
		if fn := roleOf[sp.Name]; fn != "" {
			if id, err = session(model.FunctionRoles[fn], sp.Name); err != nil {
				return err
			}
		} else {
			// A function of a test's own, no tool: the role SAM would
			// generate for it, with nothing but SAM's own policies.
			role := samiam.ImplicitRole(localAccount, sp.Name+"Role", true)
			id = &iam.Identity{Name: sp.Name, Principal: iam.SessionPrincipal(role.ARN, sp.Name), Credentials: iam.NewSessionCredentials(), Policies: role.Policies}
			e.auth.Add(id)
		}
		e.functions[sp.Name] = id
	}
	if _, ok := model.FunctionRoles[gatewayID]; ok {
		if e.gateway, err = session(model.FunctionRoles[gatewayID], gatewayID); err != nil {
			return err
		}
	} else {
		return fmt.Errorf("localtest: IAM enforcement: the template has no %s, whose role the gateway runs as", gatewayID)
	}
	if s.agentCore != nil {
		if model.Roles[acRole] == nil {
			return fmt.Errorf("localtest: IAM enforcement: the AgentCore Gateway %s's RoleArn is not !GetAtt <a role of the template>.Arn", s.agentCore.gatewayID)
		}
		if e.agentCore, err = session(acRole, "bedrock-agentcore"); err != nil {
			return err
		}
	}
	if e.logFile, err = os.OpenFile(s.LogPath("IAM"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	e.log = slog.New(slog.NewJSONHandler(e.logFile, nil))
	s.iam = e
	s.logf("IAM enforced: %d roles of %s, SigV4 on DynamoDB, Secrets Manager, S3 and Lambda; refusals in %s",
		len(model.Roles), filepath.Base(tmpl.Path), s.LogPath("IAM"))
	return nil
}

// checkEvaluable refuses a model the stack cannot enforce faithfully: a
// condition key it neither fills from a request nor knows to be absent
// locally, an operation a policy grants by name that the stack cannot
// authorize.
func checkEvaluable(m *samiam.Model) error {
	known := map[string]bool{}
	for _, k := range slices.Concat(iam.GlobalKeys, ddbproxy.ContextKeys, s3front.ContextKeys, absentKeys) {
		known[strings.ToLower(k)] = true
	}
	var errs []error
	keys := m.ConditionKeys()
	for _, k := range sortedKeys(keys) {
		if !known[k] {
			errs = append(errs, fmt.Errorf("localtest: IAM enforcement: the condition key %s (%s) is not derived by the local stack", k, keys[k][0]))
		}
	}
	for _, id := range sortedKeys(m.Roles) {
		for _, p := range m.Roles[id].Policies {
			for i, st := range p.Statements {
				if st.NotAction {
					continue
				}
				for _, a := range st.Actions {
					svc, op, _ := strings.Cut(a, ":")
					if strings.ContainsAny(op, "*?") {
						continue
					}
					var ops []string
					switch strings.ToLower(svc) {
					case "dynamodb":
						ops = ddbproxy.Operations
					case "secretsmanager":
						ops = secretsOperations
					case "s3":
						ops = s3Actions()
					default:
						continue
					}
					if !slices.ContainsFunc(ops, func(o string) bool { return strings.EqualFold(o, op) }) {
						errs = append(errs, fmt.Errorf("localtest: IAM enforcement: %s Statement[%d] grants %s, which the local stack does not serve (it authorizes %s:%s)", p.Name, i, a, svc, strings.Join(ops, ", ")))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

func catalogEntryOfTool(cat *catalog.File, tool string) (catalog.Entry, bool) {
	for _, e := range cat.Tools {
		if e.Tool.Name == tool {
			return e, true
		}
	}
	return catalog.Entry{}, false
}

// denied records a refused request in logs/IAM.log.
func (e *enforcement) denied(service, who, action, resource, msg string) {
	e.log.Warn("mcpfn-local: AccessDenied", "service", service, "principal", who, "action", action, "resource", resource, "message", msg)
}

// credentials of an identity, as the SDK takes them.
func credentialsOf(id *iam.Identity) aws.Credentials {
	return aws.Credentials{AccessKeyID: id.Credentials.AccessKeyID, SecretAccessKey: id.Credentials.SecretAccessKey, SessionToken: id.Credentials.SessionToken, Source: "mcpfn-local"}
}

// FunctionCredentials are the role-session credentials function runs with
// (as Lambda hands a function its role's): tests act as a compromised
// function with them.
func (s *Stack) FunctionCredentials(function string) (aws.Credentials, bool) {
	id := s.iam.functions[function]
	if id == nil {
		return aws.Credentials{}, false
	}
	return credentialsOf(id), true
}

// GatewayCredentials are the credentials of the gateway's role
// (GatewayFunctionRole): a second gateway over the stack uses them.
func (s *Stack) GatewayCredentials() aws.Credentials { return credentialsOf(s.iam.gateway) }

// RoleARN is the ARN of the role function runs as.
func (s *Stack) RoleARN(function string) string {
	if id := s.iam.functions[function]; id != nil {
		return id.Principal.IAMARN
	}
	return ""
}

// IAMLogPath is the file every refused AWS call is recorded in, one JSON
// line each.
func (s *Stack) IAMLogPath() string { return s.LogPath("IAM") }

// toolByName is the gateway's definition of tool (the catalog's or a
// Config.ExtraTools one).
func (s *Stack) toolByName(name string) *adapter.Tool {
	for _, t := range s.tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// guardSecrets is the Secrets Manager stand-in's Guard: a loopback Host and
// no browser, a valid signature, then the template's IAM.
func (s *Stack) guardSecrets(r *http.Request, body []byte, action, secretARN string) *secretsstandin.Refusal {
	// Foreign Hosts and browser requests never get here: the stand-in
	// refuses them itself (AllowHosts in Start).
	id, aerr := s.iam.auth.Authenticate(r, body, "secretsmanager")
	if aerr != nil {
		return &secretsstandin.Refusal{Code: aerr.Code, Message: aerr.Message}
	}
	op := strings.TrimPrefix(action, "secretsmanager:")
	if !slices.Contains(secretsOperations, op) {
		return nil // the stand-in answers it does not serve it
	}
	req, d := s.iam.auth.Decide(id, action, secretARN, nil)
	if d.Result != iam.Allowed {
		msg := d.Message(req)
		s.iam.denied("secretsmanager", id.Name, action, secretARN, msg)
		return &secretsstandin.Refusal{Code: "AccessDeniedException", Message: msg}
	}
	return nil
}

// refuseBrowser refuses what a web page can send to a loopback port: a
// foreign Host (DNS rebinding) or a cross-site request (DESIGN.md §5: every
// stand-in refuses both). "" lets the request through.
func (s *Stack) refuseBrowser(r *http.Request) string {
	return localonly.Refuse(r, s.cfg.InvokeAllowedHosts...)
}
