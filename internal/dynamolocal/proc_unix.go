//go:build unix && !linux

package dynamolocal

import "syscall"

// sysProcAttr puts the JVM in its own process group so Stop can kill it in
// one signal. Outside Linux there is no parent-death signal: a SIGKILLed
// test binary can leave the JVM running until it is killed by hand.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
