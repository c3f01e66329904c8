package mcpfntest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
)

// DB is DynamoDB Local, for tables of the project's own template.yaml.
type DB struct{ srv *dynamolocal.Server }

// DynamoDB returns the test binary's DynamoDB Local, started on first use
// and shared by every test of the binary (each keeps to tables of its own,
// see [DB.Table]). It is the emulator the local stack runs, with the
// machine's Java (17+): without Java on PATH the test is skipped, or fails
// under CI=true; without the emulator installed it fails, saying how to
// install it. MCPFN_DYNAMODB_ENDPOINT points it at a DynamoDB that is
// already running instead. [Main] stops it when the tests end.
func DynamoDB(t testing.TB) *DB {
	t.Helper()
	return &DB{srv: dynamolocal.ForTest(t)}
}

// Client is a DynamoDB client of the emulator, with dummy credentials (never
// the developer's AWS profile).
func (db *DB) Client() *dynamodb.Client { return db.srv.Client(context.Background()) }

// Endpoint is the emulator's URL, for AWS_ENDPOINT_URL_DYNAMODB.
func (db *DB) Endpoint() string { return db.srv.Endpoint() }

// Table creates the table that the template.yaml at the root of the module
// under test (the directory of its go.mod) defines as logicalID — its keys
// and indexes as written there — under a name no other test uses, and
// returns that name once the table and its indexes are active.
func (db *DB) Table(t testing.TB, logicalID string) string {
	t.Helper()
	_, name := dynamolocal.TemplateTableForTest(t, logicalID, logicalID)
	return name
}

// Main runs the tests, then stops the DynamoDB Local that [DynamoDB]
// started. Make it the package's whole TestMain:
//
//	func TestMain(m *testing.M) { mcpfntest.Main(m) }
func Main(m *testing.M) { dynamolocal.Main(m) }
