package taskstore

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// A task id is "<tool>.<128 random bits, base64url>": the table key of the
// task's item and the id the client sees. The tool's name in front lets a
// tool function's role be confined to its own tasks' items
// (dynamodb:LeadingKeys "<tool>.*" in template.yaml, decision 0033); the
// random part makes it unguessable, as the extension requires. Tool names
// are [A-Za-z0-9_-] (adapter.Define), so the last '.' splits an id, and no
// task key shares a prefix with the gateway's own items ("cancel#…",
// "gateway#…").

// randomIDLen is the length of an id's random part.
const randomIDLen = 22

// maxToolName is the longest tool name (adapter.Define).
const maxToolName = 64

// NewID returns a new task id of tool.
func NewID(tool string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return tool + "." + base64.RawURLEncoding.EncodeToString(b[:])
}

// ToolOf returns the tool a task id names, and whether id is a task id at
// all. The name is only what the id says: the gateway acts on it only once
// the task's record has verified (the record's tool is sealed with its id).
func ToolOf(id string) (string, bool) {
	i := strings.LastIndexByte(id, '.')
	if i < 1 || i > maxToolName || len(id)-i-1 != randomIDLen {
		return "", false
	}
	tool, random := id[:i], id[i+1:]
	for _, r := range tool {
		if !nameChar(r) {
			return "", false
		}
	}
	for _, r := range random {
		if !nameChar(r) {
			return "", false
		}
	}
	return tool, true
}

// nameChar: a character of a tool name and of base64url.
func nameChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_'
}

// validID reports whether id can be a task id. Ids come from clients
// (tasks/get, tasks/cancel, tasks/update): anything else is not found
// without asking DynamoDB, which would refuse an over-long key with a
// validation error rather than answer "no item".
func validID(id string) bool {
	_, ok := ToolOf(id)
	return ok
}
