package taskstore_test

import (
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{
		taskstore.EnvTable:          "Tasks",
		taskstore.EnvTTL:            "30m",
		taskstore.EnvPollIntervalMs: "250",
	}
	table, opts, err := taskstore.OptionsFromEnv(func(k string) string { return env[k] })
	if err != nil || table != "Tasks" || opts.TTL != 30*time.Minute || opts.PollInterval != 250*time.Millisecond {
		t.Errorf("table %q opts %+v err %v", table, opts, err)
	}
	table, opts, err = taskstore.OptionsFromEnv(func(string) string { return "" })
	if err != nil || table != "" || opts.TTL != 0 {
		t.Errorf("empty env: table %q opts %+v err %v", table, opts, err)
	}
	for k, v := range map[string]string{taskstore.EnvTTL: "soon", taskstore.EnvPollIntervalMs: "-1"} {
		if _, _, err := taskstore.OptionsFromEnv(func(key string) string {
			if key == k {
				return v
			}
			return ""
		}); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}
