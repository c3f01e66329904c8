package localtest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/localtest"
)

// The gateway runs as on Lambda, in a process of its own: mcpfn-gateway as
// built for the template's GatewayFunction, whose memory is its own and
// whose log is the stack's GatewayFunction.log.
func TestGatewayRunsInAProcessOfItsOwn(t *testing.T) {
	pid := stack.GatewayPID()
	if pid == 0 || pid == os.Getpid() || !localtest.Alive(pid) {
		t.Fatalf("gateway pid %d (this process %d)", pid, os.Getpid())
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err == nil && !strings.HasSuffix(exe, "/GatewayFunction/bootstrap") {
		t.Errorf("the gateway process runs %s, want the GatewayFunction's bootstrap", exe)
	}
	found := false
	for _, m := range stack.Memory() {
		if m.Component == localtest.GatewayComponent {
			found = m.PID == pid && m.RSS > 0 && m.PeakRSS >= m.RSS
		}
	}
	if !found && err == nil { // /proc is there: so is the gateway's memory
		t.Errorf("Memory() %+v: no gateway process %d with its RSS", stack.Memory(), pid)
	}
	// Its stderr (where it logs, JSON lines) is the stack's GatewayFunction.log.
	if stderr, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", pid)); err == nil && stderr != stack.LogPath(localtest.GatewayComponent) {
		t.Errorf("the gateway's stderr is %s, want %s", stderr, stack.LogPath(localtest.GatewayComponent))
	}
}

// A gateway that cannot start stops the stack's start with the reason from
// its own log.
func TestGatewayThatCannotStartSaysWhy(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.DynamoDBEndpoint = stack.DynamoDBEndpoint()
	cfg.PoolSize = 1
	cfg.Functions = []localtest.FunctionSpec{}
	cfg.ExtraFunctions, cfg.ExtraTools = cfg.ExtraFunctions[:1], cfg.ExtraTools[:1]
	cfg.GatewayEnv = map[string]string{gateway.EnvInvokeTimeout: "soon"}
	st, err := localtest.Start(t.Context(), cfg)
	if err == nil {
		st.Close()
		t.Fatal("the stack started with a gateway that cannot parse its configuration")
	}
	if !strings.Contains(err.Error(), "the gateway exited before serving") || !strings.Contains(err.Error(), gateway.EnvInvokeTimeout) {
		t.Errorf("error %v: want the gateway's exit and its reason", err)
	}
}

// The call id in a result's _meta finds the call's audit row.
func TestResultsCallIDFindsItsRow(t *testing.T) {
	cs := connect(t, unique("e2e-callid"))
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_create", Arguments: map[string]any{"channel": unique("callid"), "text": "find my row"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	id, _ := res.Meta[gateway.MetaCallID].(string)
	if id == "" {
		t.Fatalf("_meta %v: no %s", res.Meta, gateway.MetaCallID)
	}
	row, ok, err := auditor().CallRow(t.Context(), "broadcast_create", id)
	if err != nil || !ok || row.CallID != id || row.Tool != "broadcast_create" {
		t.Fatalf("row of call %s: %+v %v %v", id, row, ok, err)
	}
}
