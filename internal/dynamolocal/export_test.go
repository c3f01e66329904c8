package dynamolocal

// PID exposes the emulator's process id to the black-box tests, which check
// that no JVM outlives Stop or its parent.
func PID(s *Server) int { return s.cmd.Process.Pid }

// MaxHeapFlag exposes the -Xmx flag an Options starts the JVM with.
func MaxHeapFlag(o Options) (string, error) { return maxHeapFlag(o) }

// TmpDir exposes the JVM's own temporary directory.
func TmpDir(s *Server) string { return s.tmpDir }
