package toolcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// npmProjects holds one directory per tool installed with npm, named after
// the tool's kind: its package.json and package-lock.json (written by npm
// from the package.json, never by hand) and any file the tool runs from
// beside its node_modules.
//
//go:embed npm
var npmProjects embed.FS

// ErrNoNode is in the error (errors.Is) of a tool that needs Node.js when
// node or npm is not on PATH, or node is older than the tool needs: a caller
// for whom the tool is optional skips it and says why.
var ErrNoNode = errors.New("toolcache: Node.js is not available")

// noNodeError is an error that says what is missing and matches ErrNoNode.
type noNodeError string

func (e noNodeError) Error() string      { return string(e) }
func (noNodeError) Is(target error) bool { return target == ErrNoNode }

// npmTool is a tool installed by `npm ci` of its embedded project.
type npmTool struct {
	name string // for people, with the version: "DynamoDB Local 11.1.0"
	kind string // its directory under npm/ and under Cache.Dir
	// retry is the mcpfn command whose first run installs the tool; instead,
	// when set, is how to do without the cache (", or set X to …"). Both end
	// the errors of a failed install.
	retry, instead string
	locate         func(dir string) (string, error)
}

// ensureNPM returns t's path in the cache, installing it first unless an
// earlier run did.
func (c *Cache) ensureNPM(ctx context.Context, t npmTool) (string, error) {
	files, err := npmFiles(t.kind)
	if err != nil {
		return "", err
	}
	return c.ensure(ctx, tool{
		name:    t.name,
		kind:    t.kind,
		key:     npmKey(files),
		install: func(ctx context.Context, dir string) error { return npmInstall(ctx, dir, t, files) },
		locate:  t.locate,
	})
}

// npmFile is one file of an embedded project.
type npmFile struct {
	name string
	data []byte
}

// npmFiles returns kind's embedded project: package.json, package-lock.json,
// then the other files by name.
func npmFiles(kind string) ([]npmFile, error) {
	dir := path.Join("npm", kind)
	entries, err := npmProjects.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("toolcache: no embedded npm project %s: %w", kind, err)
	}
	rank := func(name string) int {
		switch name {
		case "package.json":
			return 0
		case "package-lock.json":
			return 1
		}
		return 2
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	if len(names) < 2 || rank(names[0]) != 0 || rank(names[1]) != 1 {
		return nil, fmt.Errorf("toolcache: embedded npm project %s lacks package.json or package-lock.json", kind)
	}
	files := make([]npmFile, len(names))
	for i, name := range names {
		data, err := fs.ReadFile(npmProjects, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("toolcache: %w", err)
		}
		files[i] = npmFile{name, data}
	}
	return files, nil
}

// npmKey names the install directory after the embedded files, so an
// upgrade (a new lock, a changed script) installs afresh beside the old
// copy. package.json and package-lock.json are hashed as they always were,
// so a project with no other file keeps the directory earlier mcpfn
// versions installed into.
func npmKey(files []npmFile) string {
	h := sha256.New()
	h.Write(files[0].data)
	h.Write([]byte{0})
	h.Write(files[1].data)
	for _, f := range files[2:] {
		h.Write([]byte{0})
		h.Write([]byte(f.name))
		h.Write([]byte{0})
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// npmInstall writes the embedded project into dir and runs npm ci there.
// npm's own settings (registry, proxy, cache) apply; the flags keep it from
// reporting to the user about audits and funding, from refusing a package's
// engines field (the caller checks the Node the tool runs on, if any), and
// from running any package script.
func npmInstall(ctx context.Context, dir string, t npmTool, files []npmFile) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return noNodeError(fmt.Sprintf("toolcache: %s is installed with npm, which is not on PATH: install Node.js (npm comes with it) and run %s again%s", t.name, t.retry, t.instead))
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("toolcache: %w", err)
		}
	}
	// --prefix: a prefix in the user's npm settings must not move the
	// install out of dir.
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefix", dir, "--no-audit", "--no-fund", "--ignore-scripts",
		"--engine-strict=false", "--loglevel=error")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("toolcache: installing %s: npm ci: %w\n%s\n(npm needs the registry in its settings reachable; run %s again once it is%s)",
			t.name, err, bytes.TrimSpace(out.Bytes()), t.retry, t.instead)
	}
	return nil
}

// npmLock is the part of an embedded package-lock.json read here.
type npmLock struct {
	Packages map[string]struct {
		Version string `json:"version"`
		Engines struct {
			Node string `json:"node"`
		} `json:"engines"`
	} `json:"packages"`
}

// npmLocked returns what kind's embedded lock says of package pkg. It
// panics on an embedded project that is not what this package was built
// with: a test reads every one.
func npmLocked(kind, pkg string) (version, nodeEngine string) {
	data, err := npmProjects.ReadFile(path.Join("npm", kind, "package-lock.json"))
	if err != nil {
		panic("toolcache: " + err.Error())
	}
	var lock npmLock
	if err := json.Unmarshal(data, &lock); err != nil {
		panic("toolcache: npm/" + kind + "/package-lock.json: " + err.Error())
	}
	p, ok := lock.Packages["node_modules/"+pkg]
	if !ok {
		panic("toolcache: npm/" + kind + "/package-lock.json locks no " + pkg)
	}
	return p.Version, p.Engines.Node
}

// nodeFor returns the node on PATH, checked to be at least the major
// version engine asks for (">=20.0.0"; "" asks for none). Its errors match
// ErrNoNode.
func nodeFor(ctx context.Context, name, engine, retry string) (string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", noNodeError(fmt.Sprintf("toolcache: %s runs on Node.js, and node is not on PATH: install Node.js and run %s again", name, retry))
	}
	want, err := engineMajor(engine)
	if err != nil || want == 0 {
		return node, err
	}
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("toolcache: %s --version: %w", node, err)
	}
	v := strings.TrimSpace(string(out))
	major, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
	if err != nil {
		return "", fmt.Errorf("toolcache: %s --version printed %q, not a version", node, v)
	}
	if major < want {
		return "", noNodeError(fmt.Sprintf("toolcache: %s needs Node.js %d or later, and %s is %s: install a newer Node.js and run %s again", name, want, node, v, retry))
	}
	return node, nil
}

// engineMajor is the major version of an engines field of the form
// ">=N.x.y", 0 for "".
func engineMajor(engine string) (int, error) {
	if engine == "" {
		return 0, nil
	}
	rest, ok := strings.CutPrefix(engine, ">=")
	if ok {
		if n, err := strconv.Atoi(strings.SplitN(rest, ".", 2)[0]); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("toolcache: engines.node %q is not of the form >=N.x.y this package reads", engine)
}
