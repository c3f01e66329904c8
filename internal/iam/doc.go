// Package iam decides AWS requests locally the way AWS IAM decides them,
// for the policies an mcpfn template uses: it parses identity and resource
// policies, evaluates a request against them (explicit deny wins; within one
// account an Allow in either the principal's identity policies or the
// resource's policy allows), and verifies the Signature Version 4 of the
// request that carries it, so the local stack can run every function as its
// own role and refuse what the role would be refused on AWS.
//
// Signatures are verified as each service checks them: the JSON and REST
// services with the whole body hashed ([Authority.Authenticate]); S3 with
// its path encoded once, the payload hash the request declares (the caller
// checks the body against it as it streams), every x-amz-* header signed,
// and presigned URLs — query-string signatures valid from X-Amz-Date for
// X-Amz-Expires seconds, at most a week ([Authority.AuthenticateS3]). A
// refusal says which check failed ([Failure]), so each front answers in its
// service's terms. A bucket's policy governs its objects ([PolicyResource]).
//
// It is a subset of IAM, and it fails closed. A policy element it does not
// evaluate — NotPrincipal, policy variables, a condition operator outside
// [SupportedOperators] — is an error from [ParsePolicy], which the stack
// reports before it starts; it is never skipped. A request whose context
// holds a value the caller could not derive ([Unknown]) is never allowed by
// a statement that conditions on it, and is denied by any Deny statement
// that does.
//
// What it evaluates:
//
//   - Effect Allow and Deny; Action and NotAction, with * and ? wildcards,
//     case-insensitively; Resource and NotResource, matched as ARNs (the
//     first five colon-separated parts each, the resource part as a whole,
//   - and ? wildcards, case-sensitively);
//   - Principal in resource policies: "*", account ids and root ARNs (which
//     delegate to the account's identity policies: they match for a Deny and
//     grant nothing for an Allow), role and user ARNs, assumed-role session
//     ARNs, service principals (which no local caller is);
//   - conditions with the String, Arn, Bool and Null operators, their
//     IfExists forms and the ForAllValues / ForAnyValue set operators, keys
//     case-insensitive, several values per key OR-ed (NOR-ed for negated
//     operators), several keys and operators AND-ed; a key missing from the
//     request makes a condition false, and a negated one true.
//
// What it does not: permission boundaries, session policies, service
// control and resource control policies, cross-account requests (every
// local principal is in one account), numeric, date, IP address and binary
// conditions. docs/security.md lists what local enforcement cannot show.
//
// The evaluator is tested against @cloud-copilot/iam-simulate (a test-time
// oracle only, installed by `make deps` into tools/node; never shipped).
package iam
