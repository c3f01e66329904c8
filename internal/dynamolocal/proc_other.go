//go:build !unix

package dynamolocal

import (
	"os"
	"syscall"
)

// Without process groups, only the JVM itself is killed; DynamoDB Local does
// not fork, so that is enough in practice.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
