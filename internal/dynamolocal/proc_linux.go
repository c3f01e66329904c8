package dynamolocal

import "syscall"

// sysProcAttr puts the JVM in its own process group, so Stop can kill it and
// anything it forks in one signal, and asks the kernel to SIGKILL it when the
// parent dies — the only guard that still works when a test binary is itself
// SIGKILLed (go test -timeout, Ctrl-C twice, an OOM kill).
//
// Pdeathsig fires when the OS thread that forked the child exits, not the
// process; start forks from a locked thread that outlives the JVM for that
// reason.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
