// Package templatetest holds the tests that keep template.yaml, the Makefile,
// functions/ and the handlers' tool catalog in step, so that adding a tool
// touches only its handler, its main.go, its template resource and its test
// (docs/guide/write-a-tool.md): every function's `make build-<LogicalId>`
// builds its own functions/<dir> and the other way round, every catalog tool
// has a main.go, a function, the gateway's forward and a sam local event
// (each gap named with what to add), every role grants exactly the calls its
// code makes (derived from the handlers' source, not listed), every
// tool-dependent part of template.yaml is what `make template`
// (internal/gentemplate) writes from the catalog and the tool functions, and
// the build produces what Lambda runs.
//
// The template is read by internal/samtemplate as plain values with
// intrinsics intact (IAM checks need to see exactly which resource a
// statement names), and tables as the CreateTableInput the DynamoDB Local
// tests create. Resource attributes and the properties of SAM functions,
// which the validator below does not read, are checked against the names
// CloudFormation and SAM define (samschema_test.go).
//
// @aws/cloudformation-validate (npm, offline) checks the template against the
// CloudFormation resource schemas and cfn-lint's rules; every FATAL, ERROR or
// WARN finding fails unless cfn-validate-excuses.json names it (rule, entity,
// property path) with a reason a reviewer can accept.
package templatetest
