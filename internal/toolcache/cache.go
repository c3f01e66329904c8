package toolcache

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Environment variables read by this package (see the package doc).
const (
	// EnvDir moves the cache; default mcpfn/ under os.UserCacheDir().
	EnvDir = "MCPFN_CACHE_DIR"
	// EnvDynamoDBLocalJarDir names a directory holding DynamoDBLocal.jar
	// and DynamoDBLocal_lib/, used instead of installing.
	EnvDynamoDBLocalJarDir = "MCPFN_DYNAMODB_LOCAL_JAR_DIR"
	// EnvRIEBin names an aws-lambda-rie binary, used instead of installing.
	EnvRIEBin = "MCPFN_RIE_BIN"
)

// retryCommand is what the user runs again once a missing prerequisite is
// installed: the command whose first run installs into the cache.
const retryCommand = "`mcpfn local`"

// Cache is the per-user directory tools are installed into. Its methods are
// safe for concurrent use, in one process and across processes.
type Cache struct {
	// Dir is the cache's root directory. Created on first install.
	Dir string
	// Progress receives one line before and one after each install (and
	// one while waiting for another process's install); nil discards them.
	Progress io.Writer

	mu sync.Mutex // serializes Progress lines
}

// Default returns the cache at $MCPFN_CACHE_DIR, or mcpfn/ under the user's
// cache directory, reporting installs to progress.
func Default(progress io.Writer) (*Cache, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return &Cache{Dir: dir, Progress: progress}, nil
}

// DefaultDir is the cache directory Default uses.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("toolcache: no cache directory for this user (%v); set %s", err, EnvDir)
	}
	return filepath.Join(base, "mcpfn"), nil
}

func (c *Cache) printf(format string, args ...any) {
	if c.Progress == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.Progress, "mcpfn: "+format+"\n", args...)
}

// tool is one thing the cache installs.
type tool struct {
	name string // for people: "DynamoDB Local 11.1.0"
	kind string // the directory under Cache.Dir
	key  string // the directory under kind: what is installed, exactly
	// install fills dir, an empty directory, with the tool.
	install func(ctx context.Context, dir string) error
	// locate returns the path the caller wants (a file or directory inside
	// dir), or an error if dir does not hold a finished install.
	locate func(dir string) (string, error)
}

// ensure returns t's path in the cache, installing t first unless an
// earlier run did.
//
// Two guards keep the cache consistent: an exclusive lock per kind, so that
// concurrent processes install once and the others wait and then find it
// installed; and installing into a temporary directory that is renamed to
// its final name only when complete, so that the final directory exists only
// when finished — whatever happened to the process that installed it.
func (c *Cache) ensure(ctx context.Context, t tool) (string, error) {
	final := filepath.Join(c.Dir, t.kind, t.key)
	if p, err := t.locate(final); err == nil {
		return p, nil
	}
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("toolcache: %w (%s moves the cache)", err, EnvDir)
	}
	unlock, waited, err := c.lock(ctx, filepath.Join(parent, ".lock"), t.name)
	if err != nil {
		return "", err
	}
	defer unlock()
	if p, err := t.locate(final); err == nil {
		if waited {
			c.printf("%s is installed (by the other process)", t.name)
		}
		return p, nil
	}

	// We hold the lock, so no one else is installing: a temporary
	// directory left here is a killed installer's, and a final directory
	// that locate refused was damaged by hand.
	stale, _ := filepath.Glob(filepath.Join(parent, ".tmp-*"))
	for _, d := range append(stale, final) {
		if err := os.RemoveAll(d); err != nil {
			return "", fmt.Errorf("toolcache: removing %s: %w", d, err)
		}
	}

	c.printf("installing %s into %s (first run only)", t.name, final)
	began := time.Now()
	tmp, err := os.MkdirTemp(parent, ".tmp-"+t.key+"-")
	if err == nil {
		err = os.Chmod(tmp, 0o755) // MkdirTemp's 0700 would stay after the rename
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("toolcache: %w", err)
	}
	p, err := c.fill(ctx, t, tmp, final)
	if err != nil {
		_ = os.RemoveAll(tmp)
		c.printf("installing %s failed after %v", t.name, time.Since(began).Round(100*time.Millisecond))
		return "", err
	}
	c.printf("installed %s (%v)", t.name, time.Since(began).Round(100*time.Millisecond))
	return p, nil
}

// fill installs t into tmp, checks the result and renames tmp to final.
func (c *Cache) fill(ctx context.Context, t tool, tmp, final string) (string, error) {
	if err := t.install(ctx, tmp); err != nil {
		return "", err
	}
	if _, err := t.locate(tmp); err != nil {
		return "", fmt.Errorf("toolcache: installing %s: the install finished but %w", t.name, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Only without a lock (platforms without flock) can another
		// process have renamed its copy into place first; it is as good
		// as ours.
		if p, lerr := t.locate(final); lerr == nil {
			_ = os.RemoveAll(tmp)
			return p, nil
		}
		return "", fmt.Errorf("toolcache: %w", err)
	}
	return t.locate(final)
}

// lock takes the exclusive lock at path, saying so when it has to wait for
// another process. A cancelled ctx stops the wait (the lock, once it comes,
// is released at once).
func (c *Cache) lock(ctx context.Context, path, name string) (unlock func(), waited bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("toolcache: %w (%s moves the cache)", err, EnvDir)
	}
	release := func() { f.Close() } // closing the file releases the lock
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("toolcache: locking %s: %w", path, err)
	}
	if ok {
		return release, false, nil
	}
	c.printf("waiting for another process installing %s", name)
	locked := make(chan error, 1)
	go func() { locked <- waitLock(f) }()
	select {
	case err := <-locked:
		if err != nil {
			f.Close()
			return nil, true, fmt.Errorf("toolcache: locking %s: %w", path, err)
		}
		return release, true, nil
	case <-ctx.Done():
		go func() { <-locked; f.Close() }()
		return nil, true, fmt.Errorf("toolcache: waiting for another process installing %s: %w", name, ctx.Err())
	}
}

// isFile reports whether path is an existing regular file.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
