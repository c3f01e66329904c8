package main

import "syscall"

// sysProcAttr has the kernel kill a gateway process when the bench dies,
// so an interrupted run leaves none behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
