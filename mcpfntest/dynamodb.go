package mcpfntest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
)

// DB is DynamoDB Local holding tables of the project's own template.yaml.
type DB struct{ srv *dynamolocal.Server }

// DynamoDB returns the test binary's DynamoDB Local, started on first use
// (the local stack's emulator, installed into mcpfn's per-user cache; Java
// 17+ on PATH). Without Java the test is skipped — or fails under CI=true.
// MCPFN_DYNAMODB_ENDPOINT points it at a DynamoDB that is already running.
// [Main] stops it when the tests end.
func DynamoDB(t testing.TB) *DB {
	t.Helper()
	return &DB{srv: dynamolocal.ForTest(t)}
}

// Client is a DynamoDB client for the emulator, with dummy credentials
// (never the developer's AWS profile).
func (db *DB) Client() *dynamodb.Client { return db.srv.Client(context.Background()) }

// Endpoint is the emulator's URL, for AWS_ENDPOINT_URL_DYNAMODB.
func (db *DB) Endpoint() string { return db.srv.Endpoint() }

// Table creates the table the project's template.yaml defines as logicalID
// (its keys and indexes as written there) under a name unique to t, and
// returns that name.
func (db *DB) Table(t testing.TB, logicalID string) string {
	t.Helper()
	_, name := dynamolocal.TemplateTableForTest(t, logicalID, logicalID)
	return name
}

// Main runs the tests and then stops the DynamoDB Local that [DynamoDB]
// started. Use it as the package's whole TestMain:
//
//	func TestMain(m *testing.M) { mcpfntest.Main(m) }
func Main(m *testing.M) { dynamolocal.Main(m) }
