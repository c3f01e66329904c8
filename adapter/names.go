package adapter

// The shapes of the names a declaration gives (a tool's name, a logical id,
// an environment variable, an index, an S3 key prefix), checked byte by
// byte. They were regexps with counted repeats ({0,511}, {1,255}), which
// regexp compiles into one state per repeat: four of them cost ~10 ms and
// ~9,000 allocations in the init of every mcpfn binary — each tool
// function's cold start and the gateway's (issue 21, docs/benchmarks.md).
// Each shape keeps its expression as text, for messages and for
// names_test.go, which checks that the shape accepts exactly what the
// expression does.

// nameShape is a name of minLen to maxLen bytes whose first byte first
// accepts and whose other bytes rest accepts. Every accepted byte is
// ASCII, so a byte count is a character count.
type nameShape struct {
	pattern        string // the equivalent regexp, never compiled here
	minLen, maxLen int
	first, rest    func(c byte) bool
}

func (n nameShape) String() string { return n.pattern }

func (n nameShape) MatchString(s string) bool {
	if len(s) < n.minLen || len(s) > n.maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		ok := n.rest
		if i == 0 {
			ok = n.first
		}
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isWord(c byte) bool { return isAlnum(c) || c == '_' }

func isLetterOrUnderscore(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

// isKeyChar: S3's safe key characters only. Neither * nor ? (IAM
// wildcards, which would widen the grant), nor $ (a policy variable, and a
// !Sub reference).
func isKeyChar(c byte) bool {
	switch c {
	case '!', '_', '.', '\'', '(', ')', '-':
		return true
	}
	return isAlnum(c)
}

var (
	toolName = nameShape{`^[a-zA-Z0-9_-]{1,64}$`, 1, 64, isToolChar, isToolChar}
	// logicalID: a template resource's logical id.
	logicalID = nameShape{`^[A-Za-z0-9]{1,255}$`, 1, 255, isAlnum, isAlnum}
	envName   = nameShape{`^[A-Za-z_][A-Za-z0-9_]{0,127}$`, 1, 128, isLetterOrUnderscore, isWord}
	// indexName: a DynamoDB index's.
	indexName = nameShape{`^[A-Za-z0-9_.-]{3,255}$`, 3, 255, isIndexChar, isIndexChar}
	// keyPrefix: empty, or up to 512 key characters and slashes, not
	// starting with a slash.
	keyPrefix = nameShape{`^([A-Za-z0-9!_.'()-][A-Za-z0-9!_.'()/-]{0,511})?$`, 0, 512, isKeyChar, func(c byte) bool { return isKeyChar(c) || c == '/' }}
)

func isToolChar(c byte) bool  { return isWord(c) || c == '-' }
func isIndexChar(c byte) bool { return isWord(c) || c == '.' || c == '-' }
