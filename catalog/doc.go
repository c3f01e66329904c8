// Package catalog is a project's tool catalog: every tool's declaration and
// the function that serves it, as `mcpfn template` writes it into
// mcpfn-tools.json beside template.yaml.
//
// The catalog is fixed when the template is generated: `mcpfn template` asks
// each function binary for its declaration ([adapter.EnvDescribe]), writes
// the catalog and the template from the answers, and both are reviewed and
// committed together. The deployed gateway and AgentCore interceptor read
// the catalog file packaged beside their bootstrap ([ToolsFromEnv]) — never
// a running function — so a compromised function cannot change its own
// scopes.
package catalog
