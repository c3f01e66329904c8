package iam

import (
	"strings"
	"unicode/utf8"
)

// glob matches s against pattern, where * is any run of characters
// (possibly empty) and ? any one character; fold compares case-insensitively.
func glob(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	// The iterative matcher: on a mismatch after a *, retry with the *
	// taking one more character.
	var p, i, starP, starI = 0, 0, -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				starP, starI = p, i
				p++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[i:])
				p, i = p+1, i+n
				continue
			default:
				if pattern[p] == s[i] {
					p, i = p+1, i+1
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starI:])
		starI += n
		p, i = starP+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// actionMatches: actions compare case-insensitively, with wildcards.
func actionMatches(pattern, action string) bool {
	return pattern == "*" || glob(pattern, action, true)
}

// arnLike matches an ARN against an ARN pattern as IAM does for Resource
// and the Arn condition operators: partition, service, region and account
// each on their own (a wildcard does not cross a colon there), the resource
// part — which may itself hold colons and slashes — as a whole.
func arnLike(pattern, arn string) bool {
	if pattern == "*" {
		return true
	}
	pp := strings.SplitN(pattern, ":", 6)
	ap := strings.SplitN(arn, ":", 6)
	if len(pp) != 6 || len(ap) != 6 {
		return glob(pattern, arn, false)
	}
	for i := range pp {
		if !glob(pp[i], ap[i], false) {
			return false
		}
	}
	return true
}
