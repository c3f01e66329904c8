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
// The template is read twice: by github.com/awslabs/goformation/v7, which
// types the resources (and rejects a resource type it does not know), and by
// internal/samtemplate as plain values with intrinsics intact, because
// goformation neither merges Globals nor keeps !Ref / !GetAtt, and IAM checks
// need to see exactly which resource a statement names.
//
// @aws/cloudformation-validate (npm, offline) checks the template against the
// CloudFormation resource schemas and cfn-lint's rules; every FATAL, ERROR or
// WARN finding fails unless cfn-validate-excuses.json names it (rule, entity,
// property path) with a reason a reviewer can accept.
package templatetest
