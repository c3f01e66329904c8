//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package toolcache

import (
	"errors"
	"os"
	"syscall"
)

const haveLock = true

// tryLock takes an exclusive flock on f if it is free. The lock belongs to
// the open file: closing f releases it, and so does the kernel when the
// process dies, so a killed installer never leaves the cache locked.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// waitLock takes an exclusive flock on f, waiting for it. (Go's signal
// handlers are SA_RESTART, so a signal does not end the wait with EINTR.)
func waitLock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
