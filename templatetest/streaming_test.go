package templatetest

import (
	"strconv"
	"testing"

	"github.com/mcpfn/mcpfn/taskstore"
)

// TestLongRunningCallsAreDeployable: the gateway's Function URL streams
// (progress notifications reach the client while a call runs: lambdaurl
// needs RESPONSE_STREAM), every tool function's asynchronous invokes (task
// runs) are retried within Lambda's bounds, and the gateway and every tool
// function know the tasks table.
func TestLongRunningCallsAreDeployable(t *testing.T) {
	rt := raw(t)
	gw, ok := rt.Resource("GatewayFunction")
	if !ok {
		t.Fatal("no GatewayFunction")
	}
	if mode := dig(gw.Properties, "FunctionUrlConfig", "InvokeMode"); mode != "RESPONSE_STREAM" {
		t.Errorf("GatewayFunction FunctionUrlConfig.InvokeMode = %v, want RESPONSE_STREAM", mode)
	}
	fns := []string{"GatewayFunction"}
	for _, fn := range gatewayToolFunctions(t) {
		fns = append(fns, fn)
	}
	for _, fn := range fns {
		r, _ := rt.Resource(fn)
		v := envOf(r.Properties)[taskstore.EnvTable]
		if f, arg := intrinsic(v); f != "Ref" || arg != "TasksTable" {
			t.Errorf("%s: %s = %v, want !Ref TasksTable", fn, taskstore.EnvTable, v)
		}
		if fn == "GatewayFunction" {
			continue
		}
		cfg := dig(r.Properties, "EventInvokeConfig")
		retries, _ := strconv.Atoi(stringOf(dig(cfg, "MaximumRetryAttempts")))
		age, _ := strconv.Atoi(stringOf(dig(cfg, "MaximumEventAgeInSeconds")))
		if cfg == nil || retries < 0 || retries > 2 || age < 60 || age > 21600 {
			t.Errorf("%s: EventInvokeConfig %v, want MaximumRetryAttempts 0-2 and MaximumEventAgeInSeconds 60-21600", fn, cfg)
		}
	}
}

// stringOf is a scalar of the YAML template as text.
func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.Itoa(int(x))
	}
	return ""
}
