//go:build unix

package localtest

import (
	"errors"
	"fmt"
	"syscall"
)

// Freeze stops every process of function (its emulators and their
// bootstraps) with SIGSTOP, as Lambda freezes an execution environment once
// an invocation has answered; thaw resumes them.
func (s *Stack) Freeze(function string) (thaw func(), err error) {
	f := s.functions[function]
	if f == nil {
		return nil, fmt.Errorf("no function %s", function)
	}
	var pids []int
	for _, e := range f.emulators() {
		pids = append(pids, e.pids()...)
	}
	for _, p := range pids {
		// A process that already ended (a crashed bootstrap) is frozen
		// enough.
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
			return nil, err
		}
	}
	return func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}, nil
}
