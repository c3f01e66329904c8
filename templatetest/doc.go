// Package templatetest holds the tests of this repository's deployment: its
// template.yaml, its catalog file (mcpfn-tools.json), its events/ and the
// build glue, as `mcpfn template` and `mcpfn build` make and use them for
// any project (DESIGN.md §8). It knows the demo only through those files:
// it never imports package handlers, so what it checks is what a project of
// a user's own would get.
//
// What holds: `mcpfn template -check` passes (the regions and the catalog
// are what the declarations generate, no generated role is widened from
// outside, every tool has its event); every template function is a catalog
// tool's or mcpfn's own, and `mcpfn build` builds each for linux/arm64 (the
// gateway and the interceptor with the catalog beside their bootstrap);
// every role grants exactly what the catalog's declarations and mcpfn's
// rules give it (derived here from the catalog, not read back from the
// template), with no wildcard; call keys, invoke permissions, the Function
// URL, the AgentCore parts and the tables are as the gateway, the adapter
// and taskstore expect; each tool's sam local event reaches its handler
// once signed; and a new tool needs only its handler, its main and one
// `mcpfn template`. Whether the demo's declarations say what its handlers'
// code does is the demo's own test (handlers/iam_test.go).
//
// The template is read by internal/samtemplate as plain values with
// intrinsics intact — IAM checks need to see exactly which resource a
// statement names — and its tables as the CreateTableInput the handler and
// taskstore tests create in DynamoDB Local.
//
// @aws/cloudformation-validate (npm, offline) checks the template against the
// CloudFormation resource schemas and cfn-lint's rules; every FATAL, ERROR or
// WARN finding fails unless cfn-validate-excuses.json names it (rule, entity,
// property path) with a reason a reviewer can accept.
package templatetest
