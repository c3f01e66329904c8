// The test-time oracle of internal/iam (its oracle_test.go runs it with the
// Node of this directory): decides each case with @cloud-copilot/iam-simulate
// and prints one JSON result per case. That package is AGPL-3.0 and is a
// devDependency here only: nothing mcpfn ships or installs for its users
// runs or contains it (docs/decisions/0032-local-iam-enforcement.md).
//
// stdin: a JSON array of cases
//   {identityPolicies: [policy…], resourcePolicy: policy|null,
//    principal: "<session or user ARN>", account: "<id>", action: "s:Op",
//    resource: "<arn>", context: {key: "value" | ["values"]}}
// stdout: a JSON array of {result: "Allowed"|"ExplicitlyDenied"|
//   "ImplicitlyDenied", ignored: [keys the simulator dropped]} or
//   {error: "…"} per case.
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const out = []
for (const c of cases) {
  const simulation = {
    identityPolicies: (c.identityPolicies ?? []).map((policy, i) => ({ name: `identity${i}`, policy })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    request: {
      principal: c.principal,
      action: c.action,
      resource: { resource: c.resource, accountId: c.account },
      contextVariables: c.context
    }
  }
  if (c.resourcePolicy) simulation.resourcePolicy = c.resourcePolicy
  try {
    const r = await runSimulation(simulation, {})
    if (r.resultType === 'error') {
      out.push({ error: JSON.stringify(r.errors) })
    } else if (r.resultType === 'single') {
      out.push({ result: r.overallResult, ignored: r.result.ignoredContextKeys ?? [] })
    } else {
      out.push({ error: `unexpected result type ${r.resultType}` })
    }
  } catch (e) {
    out.push({ error: String(e && e.stack ? e.stack : e) })
  }
}
process.stdout.write(JSON.stringify(out))
