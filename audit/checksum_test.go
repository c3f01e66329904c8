package audit_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"

	"github.com/mcpfn/mcpfn/audit"
)

// syncBuffer is a bytes.Buffer safe for the SDK's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConflictingWriteLogsNoChecksumWarning: a conditional write that loses
// (a retried call, a replayed row already there) is a success for the
// auditor and must not make the SDK warn "response did not match expected
// checksum". DynamoDB Local answers errors without an X-Amz-Crc32 header,
// which the SDK's CRC32 check compared as 0. The client is built the way
// NewFromEnv and the CLI build it, with the SDK's logger kept.
func TestConflictingWriteLogsNoChecksumWarning(t *testing.T) {
	e := newEnv(t)
	var logs syncBuffer
	client := audit.NewDynamoClient(aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(e.server.Endpoint()),
		Credentials:  credentials.NewStaticCredentialsProvider("mcpfnlocal", "mcpfnlocal", ""),
		Logger:       logging.NewStandardLogger(&logs),
	})
	a := e.auditor(t, audit.Config{Client: client})
	ctx := context.Background()
	for range 3 {
		a.Record(ctx, baseRow("conflict-1")) // the 2nd and 3rd lose the condition
	}
	var fb bytes.Buffer
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fb, MaxAttempts: 1})
	down.Record(ctx, baseRow("conflict-1"))
	if _, err := audit.Replay(ctx, strings.NewReader(fb.String()), a, "broadcast_delete"); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Written != 1 || st.Duplicates != 3 {
		t.Fatalf("stats %+v", st)
	}
	if strings.Contains(logs.String(), "checksum") {
		t.Errorf("the SDK warned:\n%s", logs.String())
	}
}
