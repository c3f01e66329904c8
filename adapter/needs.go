package adapter

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// TableAccess is one DynamoDB table (or one of its indexes) a tool's handler
// uses, and the actions it calls on it. `mcpfn template` grants the tool's
// function exactly these actions on exactly this resource and sets Env to
// the table's name:
//
//	adapter.TableAccess{Table: "NotesTable", Env: "NOTES_TABLE", Actions: []string{"PutItem", "GetItem"}}
//	adapter.TableAccess{Table: "NotesTable", Env: "NOTES_TABLE", Index: "byOwner", Actions: []string{"Query"}}
//
// Table is the logical id of a table the project's template.yaml defines
// (outside mcpfn's generated regions). Actions are DynamoDB action names,
// with or without the "dynamodb:" prefix; wildcards are refused, so a role
// never grows beyond what its declaration says.
type TableAccess struct {
	Table   string   `json:"table"`
	Env     string   `json:"env"`
	Actions []string `json:"actions"`
	// Index, when set, confines Actions to that index (Query and Scan
	// only): the role may read the index and not the table.
	Index string `json:"index,omitempty"`
}

// The DynamoDB actions a declaration may name: the item and query API. Table
// management (CreateTable, UpdateTable, DeleteTable…) is the template's
// business, never a tool's.
var tableActions = []string{
	"BatchGetItem", "BatchWriteItem", "ConditionCheckItem", "DeleteItem", "DescribeTable",
	"GetItem", "PutItem", "Query", "Scan", "UpdateItem",
}

// indexActions are the actions DynamoDB authorizes on an index ARN.
var indexActions = []string{"Query", "Scan"}

var (
	logicalID = regexp.MustCompile(`^[A-Za-z0-9]{1,255}$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	indexName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)
)

// reservedEnvPrefixes are the environment variables a declaration may not
// set: mcpfn's own (a tool that could set MCPFN_AUDIT_TABLE would choose
// where its evidence goes) and Lambda's.
var reservedEnvPrefixes = []string{"MCPFN_", "AWS_", "LAMBDA_", "_"}

// Defaults and bounds of a function's deployment (Lambda's own bounds).
const (
	DefaultTimeout  = 10 * time.Second
	MaxTimeout      = 15 * time.Minute
	DefaultMemoryMB = 256
	minMemoryMB     = 128
	maxMemoryMB     = 10240
)

// deployNeeds is what a tool's function needs on AWS, checked and normalised.
type deployNeeds struct {
	tables   []TableAccess // actions without the prefix, sorted, deduplicated
	timeout  time.Duration
	memoryMB int
}

func deployNeedsOf(tables []TableAccess, timeout time.Duration, memoryMB int) (deployNeeds, error) {
	n := deployNeeds{timeout: timeout, memoryMB: memoryMB}
	if n.timeout == 0 {
		n.timeout = DefaultTimeout
	}
	if n.timeout < time.Second || n.timeout > MaxTimeout || n.timeout%time.Second != 0 {
		return n, fmt.Errorf("Timeout %v: want whole seconds from 1s to %v", timeout, MaxTimeout)
	}
	if n.memoryMB == 0 {
		n.memoryMB = DefaultMemoryMB
	}
	if n.memoryMB < minMemoryMB || n.memoryMB > maxMemoryMB {
		return n, fmt.Errorf("MemoryMB %d: want %d to %d", memoryMB, minMemoryMB, maxMemoryMB)
	}
	envTable := map[string]string{}
	seen := map[string]bool{}
	for i, t := range tables {
		where := fmt.Sprintf("Tables[%d]", i)
		if !logicalID.MatchString(t.Table) {
			return n, fmt.Errorf("%s.Table %q: want the table's logical id in template.yaml (letters and digits)", where, t.Table)
		}
		if !envName.MatchString(t.Env) {
			return n, fmt.Errorf("%s.Env %q: want an environment variable name", where, t.Env)
		}
		for _, p := range reservedEnvPrefixes {
			if strings.HasPrefix(strings.ToUpper(t.Env), p) {
				return n, fmt.Errorf("%s.Env %q: names starting with %s are reserved for mcpfn and Lambda", where, t.Env, p)
			}
		}
		if prev, ok := envTable[t.Env]; ok && prev != t.Table {
			return n, fmt.Errorf("%s.Env %q names both %s and %s", where, t.Env, prev, t.Table)
		}
		envTable[t.Env] = t.Table
		if t.Index != "" && !indexName.MatchString(t.Index) {
			return n, fmt.Errorf("%s.Index %q: not a DynamoDB index name", where, t.Index)
		}
		key := t.Table + "/" + t.Index
		if seen[key] {
			return n, fmt.Errorf("%s: %s is listed twice; put all its actions in one entry", where, strings.TrimSuffix(key, "/"))
		}
		seen[key] = true
		if len(t.Actions) == 0 {
			return n, fmt.Errorf("%s: no Actions for %s", where, t.Table)
		}
		allowed := tableActions
		if t.Index != "" {
			allowed = indexActions
		}
		var actions []string
		for _, a := range t.Actions {
			bare := strings.TrimPrefix(a, "dynamodb:")
			if !slices.Contains(allowed, bare) {
				return n, fmt.Errorf("%s: action %q is not one of %s", where, a, strings.Join(allowed, ", "))
			}
			if !slices.Contains(actions, bare) {
				actions = append(actions, bare)
			}
		}
		slices.Sort(actions)
		n.tables = append(n.tables, TableAccess{Table: t.Table, Env: t.Env, Actions: actions, Index: t.Index})
	}
	return n, nil
}

// Tables returns the tables the tool's declaration says it uses.
func (t *Tool) Tables() []TableAccess {
	out := make([]TableAccess, len(t.deploy.tables))
	for i, a := range t.deploy.tables {
		a.Actions = slices.Clone(a.Actions)
		out[i] = a
	}
	return out
}

// Timeout returns the function timeout the tool declares (default 10 s).
func (t *Tool) Timeout() time.Duration { return t.deploy.timeout }

// MemoryMB returns the function memory the tool declares (default 256).
func (t *Tool) MemoryMB() int { return t.deploy.memoryMB }
