package audit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

func TestNewFromEnvOffWithoutTable(t *testing.T) {
	t.Setenv(audit.EnvTable, "")
	a, err := audit.NewFromEnv(context.Background())
	if a != nil || err != nil {
		t.Errorf("NewFromEnv = %v, %v; want nil, nil", a, err)
	}
}

func TestNewFromEnvAsOnLambda(t *testing.T) {
	e := newEnv(t)
	// What Lambda and template.yaml set, aimed at the local emulators; the
	// config files point nowhere so a developer's profile cannot interfere.
	empty := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		audit.EnvTable:                e.table,
		audit.EnvRetentionDays:        "7",
		audit.EnvEntityDimension:      "broadcastId",
		audit.EnvXRayDaemon:           e.daemon.Addr(),
		"AWS_ENDPOINT_URL_DYNAMODB":   e.server.Endpoint(),
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "mcpfnlocal",
		"AWS_SECRET_ACCESS_KEY":       "mcpfnlocal",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             empty,
		"AWS_SHARED_CREDENTIALS_FILE": empty,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	a, err := audit.NewFromEnv(context.Background())
	if err != nil || a == nil {
		t.Fatalf("NewFromEnv = %v, %v", a, err)
	}
	row := baseRow("call-env")
	row.Dimensions = map[string]string{"broadcastId": "b-9"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a.Record(ctx, row)
	it := e.item(t, "call-env")
	if str(it, "entityKey") != "broadcastId#b-9" {
		t.Errorf("row: %v", it)
	}
	if row.ExpiresAt != row.StartedAt.Add(7*24*time.Hour).Unix() {
		t.Errorf("expiresAt %d", row.ExpiresAt)
	}
	if _, err := e.daemon.WaitFor(waitCtx(t), func(d xraystandin.Document) bool { return d.ID == row.SpanID }); err != nil {
		t.Error(err)
	}
}

// NewFromEnvWith builds the auditor on the AWS configuration it is given
// (adapter.Start shares one between its clients), asking for it only when
// auditing is on.
func TestNewFromEnvWithSharedConfig(t *testing.T) {
	t.Setenv(audit.EnvTable, "")
	if a, err := audit.NewFromEnvWith(context.Background(), func() (aws.Config, error) {
		t.Error("AWS config asked for with auditing off")
		return aws.Config{}, nil
	}); a != nil || err != nil {
		t.Errorf("NewFromEnvWith = %v, %v; want nil, nil", a, err)
	}
	e := newEnv(t)
	t.Setenv(audit.EnvTable, e.table)
	t.Setenv(audit.EnvXRayDaemon, "")
	// Nothing in the environment reaches DynamoDB Local: only the
	// configuration handed over does.
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	asked := 0
	a, err := audit.NewFromEnvWith(context.Background(), func() (aws.Config, error) {
		asked++
		return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(e.server.Endpoint()),
			Credentials: credentials.NewStaticCredentialsProvider("mcpfnlocal", "mcpfnlocal", "")}, nil
	})
	if err != nil || a == nil || asked != 1 {
		t.Fatalf("NewFromEnvWith = %v, %v; config asked for %d times", a, err, asked)
	}
	row := baseRow("call-shared-config")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a.Record(ctx, row)
	if it := e.item(t, "call-shared-config"); str(it, "callId") != "call-shared-config" {
		t.Errorf("row: %v", it)
	}
}
