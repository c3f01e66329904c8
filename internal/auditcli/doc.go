// Package auditcli is the audit command line — `mcpfn audit` and its alias
// `mcpfn-audit`: a trace's rows as a tree, the calls on an entity or by a
// caller, the replay of fallback rows from logs, and serve, the audit
// viewer. See docs/audit.md and docs/viewer.md.
package auditcli
