package project

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// rootFile, in a project's entry of the cache, names the project's root.
const rootFile = "root"

// unclaimedAge is how old an entry without a rootFile must be before a
// prune removes it: younger, it may be one another mcpfn is creating.
const unclaimedAge = time.Hour

// BuildDir is where mcpfn builds this project's functions for this
// machine, in the per-user cache and apart from other projects'. It makes
// the project's entry, and first removes the entries of projects whose root
// is gone: a project made in a temporary directory (a test's, a try-out)
// would otherwise leave its functions' binaries, tens of MB, in the cache
// for ever.
func (p *Project) BuildDir() (string, error) {
	c, err := CacheDir()
	if err != nil {
		return "", err
	}
	projects := filepath.Join(c, "projects")
	pruneProjects(projects, time.Now())
	sum := sha256.Sum256([]byte(p.Root))
	entry := filepath.Join(projects, hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(entry, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(entry, rootFile), []byte(p.Root), 0o644); err != nil {
		return "", err
	}
	return filepath.Join(entry, "bin"), nil
}

// pruneProjects removes the entries under projects whose root directory no
// longer exists, and those older than unclaimedAge that name no root (made
// before entries did). Errors are ignored: pruning is housekeeping, and an
// entry that stays costs disk, not correctness.
func pruneProjects(projects string, now time.Time) {
	entries, err := os.ReadDir(projects)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(projects, e.Name())
		root, err := os.ReadFile(filepath.Join(dir, rootFile))
		switch {
		case err == nil:
			if _, err := os.Stat(string(root)); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
		case errors.Is(err, fs.ErrNotExist):
			info, err := e.Info()
			if err != nil || now.Sub(info.ModTime()) < unclaimedAge {
				continue
			}
		default:
			continue
		}
		_ = os.RemoveAll(dir)
	}
}
