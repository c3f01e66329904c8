package dynamolocal

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tmpPrefix names the temporary directory each JVM is given as its
// java.io.tmpdir. DynamoDB Local unpacks its SQLite library (about 0.9 MB)
// into java.io.tmpdir at every start and deletes it only at a clean JVM
// exit, which never comes: Stop and the parent-death signal both SIGKILL.
// Left in the shared temporary directory, one copy per start filled the
// disk of a machine that ran the tests all day (1,366 copies, 1.2 GB).
const tmpPrefix = "mcpfn-dynamodb-local-"

// newTmpDir makes the JVM's own temporary directory, named after this
// process so that a later Start can tell a leftover (its process gone)
// from a directory in use, and first removes such leftovers.
func newTmpDir() (string, error) {
	sweepTmpDirs(os.TempDir())
	return os.MkdirTemp("", tmpPrefix+strconv.Itoa(os.Getpid())+"-")
}

// sweepTmpDirs removes the JVM temporary directories in dir whose process
// has ended: what a SIGKILLed test binary or `mcpfn local` left behind.
func sweepTmpDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tmpPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil && n > 0 && processGone(n) {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
