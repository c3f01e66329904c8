//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package toolcache

import "os"

// Without flock there is no lock: concurrent first runs each install into a
// temporary directory of their own and the first rename wins (ensure keeps
// the cache consistent either way; only the work is done twice).
func tryLock(*os.File) (bool, error) { return true, nil }

const haveLock = false

func waitLock(*os.File) error { return nil }
