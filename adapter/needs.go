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

// BucketAccess is one S3 bucket a tool's handler uses, the object actions
// it calls on it and, optionally, the key prefix it is confined to. `mcpfn
// template` grants the tool's function exactly these actions on the objects
// under Prefix and sets Env to the bucket's name:
//
//	adapter.BucketAccess{Bucket: "ReportsBucket", Env: "REPORTS_BUCKET", Actions: []string{"PutObject", "GetObject"}, Prefix: "reports/"}
//
// Bucket is the logical id of an AWS::S3::Bucket the project's template.yaml
// defines (outside mcpfn's generated regions; mcpfn's own payloads bucket is
// granted to each tool on its own prefixes without a declaration). Actions
// are S3 object actions, with or without the "s3:" prefix; wildcards and
// bucket management are refused. The grant covers the objects whose keys
// start with Prefix (every object of the bucket when it is empty).
type BucketAccess struct {
	Bucket  string   `json:"bucket"`
	Env     string   `json:"env"`
	Actions []string `json:"actions"`
	Prefix  string   `json:"prefix,omitempty"`
}

// The S3 actions a declaration may name: reading, writing and deleting
// objects and their versions. Listing, ACLs, tags, retention and the
// bucket's own settings are the template's business, never a tool's.
var bucketActions = []string{"DeleteObject", "DeleteObjectVersion", "GetObject", "GetObjectVersion", "PutObject"}

var (
	logicalID = regexp.MustCompile(`^[A-Za-z0-9]{1,255}$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	indexName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)
	// keyPrefix: S3's safe key characters only. Neither * nor ? (IAM
	// wildcards, which would widen the grant), nor $ (a policy variable,
	// and a !Sub reference), nor a leading /.
	keyPrefix = regexp.MustCompile(`^([A-Za-z0-9!_.'()-][A-Za-z0-9!_.'()/-]{0,511})?$`)
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
	tables   []TableAccess  // actions without the prefix, sorted, deduplicated
	buckets  []BucketAccess // likewise
	timeout  time.Duration
	memoryMB int
}

func deployNeedsOf(tables []TableAccess, buckets []BucketAccess, timeout time.Duration, memoryMB int) (deployNeeds, error) {
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
	// envOf: the resource each variable names, tables and buckets alike.
	envOf := map[string]string{}
	checkEnv := func(where, env, resource string) error {
		if !envName.MatchString(env) {
			return fmt.Errorf("%s.Env %q: want an environment variable name", where, env)
		}
		for _, p := range reservedEnvPrefixes {
			if strings.HasPrefix(strings.ToUpper(env), p) {
				return fmt.Errorf("%s.Env %q: names starting with %s are reserved for mcpfn and Lambda", where, env, p)
			}
		}
		if prev, ok := envOf[env]; ok && prev != resource {
			return fmt.Errorf("%s.Env %q names both %s and %s", where, env, prev, resource)
		}
		envOf[env] = resource
		return nil
	}
	seen := map[string]bool{}
	for i, t := range tables {
		where := fmt.Sprintf("Tables[%d]", i)
		if !logicalID.MatchString(t.Table) {
			return n, fmt.Errorf("%s.Table %q: want the table's logical id in template.yaml (letters and digits)", where, t.Table)
		}
		if err := checkEnv(where, t.Env, t.Table); err != nil {
			return n, err
		}
		if t.Index != "" && !indexName.MatchString(t.Index) {
			return n, fmt.Errorf("%s.Index %q: not a DynamoDB index name", where, t.Index)
		}
		key := t.Table + "/" + t.Index
		if seen[key] {
			return n, fmt.Errorf("%s: %s is listed twice; put all its actions in one entry", where, strings.TrimSuffix(key, "/"))
		}
		seen[key] = true
		allowed := tableActions
		if t.Index != "" {
			allowed = indexActions
		}
		actions, err := normalActions(where, t.Table, "dynamodb:", t.Actions, allowed)
		if err != nil {
			return n, err
		}
		n.tables = append(n.tables, TableAccess{Table: t.Table, Env: t.Env, Actions: actions, Index: t.Index})
	}
	seenBucket := map[string]bool{}
	for i, b := range buckets {
		where := fmt.Sprintf("Buckets[%d]", i)
		if !logicalID.MatchString(b.Bucket) {
			return n, fmt.Errorf("%s.Bucket %q: want the bucket's logical id in template.yaml (letters and digits)", where, b.Bucket)
		}
		if err := checkEnv(where, b.Env, b.Bucket); err != nil {
			return n, err
		}
		if !keyPrefix.MatchString(b.Prefix) {
			return n, fmt.Errorf("%s.Prefix %q: want an object key prefix of letters, digits and !_.'()-/ (no wildcards, no leading /, at most 512 bytes)", where, b.Prefix)
		}
		key := b.Bucket + "/" + b.Prefix
		if seenBucket[key] {
			return n, fmt.Errorf("%s: %s with prefix %q is listed twice; put all its actions in one entry", where, b.Bucket, b.Prefix)
		}
		seenBucket[key] = true
		actions, err := normalActions(where, b.Bucket, "s3:", b.Actions, bucketActions)
		if err != nil {
			return n, err
		}
		n.buckets = append(n.buckets, BucketAccess{Bucket: b.Bucket, Env: b.Env, Actions: actions, Prefix: b.Prefix})
	}
	return n, nil
}

// normalActions checks a declared access's actions against allowed and
// returns them without the service prefix, sorted and deduplicated.
func normalActions(where, resource, service string, list, allowed []string) ([]string, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: no Actions for %s", where, resource)
	}
	var actions []string
	for _, a := range list {
		bare := strings.TrimPrefix(a, service)
		if !slices.Contains(allowed, bare) {
			return nil, fmt.Errorf("%s: action %q is not one of %s", where, a, strings.Join(allowed, ", "))
		}
		if !slices.Contains(actions, bare) {
			actions = append(actions, bare)
		}
	}
	slices.Sort(actions)
	return actions, nil
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

// Buckets returns the S3 buckets the tool's declaration says it uses.
func (t *Tool) Buckets() []BucketAccess {
	out := make([]BucketAccess, len(t.deploy.buckets))
	for i, b := range t.deploy.buckets {
		b.Actions = slices.Clone(b.Actions)
		out[i] = b
	}
	return out
}

// Timeout returns the function timeout the tool declares (default 10 s).
func (t *Tool) Timeout() time.Duration { return t.deploy.timeout }

// MemoryMB returns the function memory the tool declares (default 256).
func (t *Tool) MemoryMB() int { return t.deploy.memoryMB }
