//go:build mcpfn_xraysdk

package audit_test

import (
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"
)

// The SDK logs "Emitter using address" to stdout for every emitter; tests
// and benchmarks create dozens, and the lines break benchmark output.
func init() { xray.SetLogger(xraylog.NullLogger) }
