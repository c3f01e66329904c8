package localtest

import "testing"

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvMCPAddr, "127.0.0.1:18080")
	t.Setenv(EnvInvokeAddr, " 127.0.0.1:13001 ")
	t.Setenv(EnvDynamoDBAddr, "")
	t.Setenv(EnvXRayAddr, "127.0.0.1:12000")
	t.Setenv(EnvDir, "/tmp/x")
	t.Setenv(EnvDynamoDBEndpoint, "http://127.0.0.1:9999")
	t.Setenv(EnvViewerAddr, "127.0.0.1:18083")
	cfg := ConfigFromEnv()
	cfg.defaults()
	want := Config{Dir: "/tmp/x", MCPAddr: "127.0.0.1:18080", InvokeAddr: "127.0.0.1:13001", DynamoDBAddr: DefaultDynamoDBAddr, XRayAddr: "127.0.0.1:12000", DynamoDBEndpoint: "http://127.0.0.1:9999"}
	if cfg.Dir != want.Dir || cfg.MCPAddr != want.MCPAddr || cfg.InvokeAddr != want.InvokeAddr || cfg.DynamoDBAddr != want.DynamoDBAddr || cfg.XRayAddr != want.XRayAddr || cfg.DynamoDBEndpoint != want.DynamoDBEndpoint {
		t.Errorf("got %+v, want %+v", cfg, want)
	}
	if cfg.ViewerAddr != "127.0.0.1:18083" || cfg.AgentCoreAddr != DefaultAgentCoreAddr {
		t.Errorf("viewer %q, AgentCore front %q", cfg.ViewerAddr, cfg.AgentCoreAddr)
	}
	t.Setenv(EnvViewerAddr, "")
	def := ConfigFromEnv()
	def.defaults()
	if def.ViewerAddr != DefaultViewerAddr || DefaultViewerAddr != "127.0.0.1:8083" {
		t.Errorf("default viewer address %q", def.ViewerAddr)
	}
	if cfg.PoolSize != DefaultPoolSize || cfg.MaxConcurrency != DefaultMaxConcurrency || cfg.Stdout == nil {
		t.Errorf("defaults not applied: %+v", cfg)
	}
}
