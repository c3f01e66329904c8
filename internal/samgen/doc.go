// Package samgen writes the parts of a project's template.yaml that mcpfn
// owns, from the project's catalog (package catalog): the shared skeleton —
// parameters, rules, conditions, the audit and tasks tables, the payloads
// bucket and its policy, the gateway and its Function URL, the caller
// policy, the AgentCore Gateway parts, outputs — and one region per tool —
// its function with its least-privilege role, its call key and the key's
// policy, its invoke permissions, its AgentCore target. Each is a region
// between marker comments (regions.go); the project's own resources live
// outside them and are never touched, and a tool names its tables and
// buckets by their logical ids. What each region holds is in
// regions/ as text templates; `mcpfn template` runs Generate, `mcpfn
// template -check` compares its output with the file.
package samgen
