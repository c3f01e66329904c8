package audit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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
