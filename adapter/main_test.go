package adapter_test

import (
	"testing"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
)

// The task tests keep task records in DynamoDB Local, started on first use.
func TestMain(m *testing.M) { dynamolocal.Main(m) }
