//go:build unix && !linux

package localtest

import (
	"net"
	"strconv"
	"syscall"
	"time"
)

// Outside Linux there is neither a parent-death signal nor /proc: Close
// still kills each emulator's process group, but a SIGKILLed stack can leave
// emulators behind and the bootstrap processes are found by nobody. The
// stack is meant for Linux (CI) and works elsewhere on a best-effort basis.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func descendants(int) []int { return nil }

func rss(int) int64 { return 0 }

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// listening falls back to a connect: without /proc the listener's owner
// cannot be checked.
func listening(_ int, port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
