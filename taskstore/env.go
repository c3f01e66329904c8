package taskstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by [OptionsFromEnv].
const (
	// EnvTable names the TasksTable (gateway and task-capable functions).
	EnvTable = "MCPFN_TASKS_TABLE"
	// EnvTTL is a new task's lifetime as a Go duration ("1h").
	EnvTTL = "MCPFN_TASK_TTL"
	// EnvPollIntervalMs is the pollIntervalMs a new task advertises.
	EnvPollIntervalMs = "MCPFN_TASK_POLL_INTERVAL_MS"
)

// OptionsFromEnv returns the table name and the options the environment
// sets; an empty table means tasks are off. Unset values take the defaults.
func OptionsFromEnv(getenv func(string) string) (table string, opts Options, err error) {
	table = strings.TrimSpace(getenv(EnvTable))
	if v := strings.TrimSpace(getenv(EnvTTL)); v != "" {
		d, perr := time.ParseDuration(v)
		if perr != nil || d <= 0 {
			return "", Options{}, fmt.Errorf("taskstore: %s=%q is not a positive duration", EnvTTL, v)
		}
		opts.TTL = d
	}
	if v := strings.TrimSpace(getenv(EnvPollIntervalMs)); v != "" {
		ms, perr := strconv.Atoi(v)
		if perr != nil || ms <= 0 {
			return "", Options{}, fmt.Errorf("taskstore: %s=%q is not a positive number of milliseconds", EnvPollIntervalMs, v)
		}
		opts.PollInterval = time.Duration(ms) * time.Millisecond
	}
	return table, opts, nil
}
