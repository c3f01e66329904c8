//go:build unix

package dynamolocal

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has this id (signal 0 finds none).
// A process of another user, or any doubt, counts as alive.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
