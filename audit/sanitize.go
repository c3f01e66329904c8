package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the argument preview. The preview is for a human reading an audit
// row, not a copy of the call: 16 KB shows any realistic argument object whole
// while keeping every row far below DynamoDB's 400 KB item limit.
const (
	PreviewLimit = 16 << 10
	MaxDepth     = 20

	// Redacted replaces the value of a key that names a secret.
	Redacted = "[redacted]"
	// DepthLimited replaces a container nested deeper than MaxDepth.
	DepthLimited = "[depth limit]"
)

// SanitizeArgs turns raw call arguments into the preview stored on the row.
//
// Valid JSON is re-emitted compactly, key order preserved, with the value of
// every key that names a secret (see [IsSecretKey]) replaced by "[redacted]",
// every string value that is secret-shaped (see [IsSecretValue]) replaced
// likewise, the "value" of a name/value pair whose name names a secret
// ({"name":"DB_PASSWORD","value":"…"}, {"Key":…,"Value":…}) replaced, and
// containers deeper than [MaxDepth] replaced by "[depth limit]". Invalid
// JSON is never previewed as text, which could hold anything: it becomes
// [InvalidJSONPreview], its length and SHA-256. The result is valid UTF-8
// and at most [PreviewLimit] bytes, cut on a rune boundary, with truncated
// reporting the cut: a truncated preview is no longer valid JSON.
func SanitizeArgs(raw []byte) (preview string, truncated bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if !json.Valid(raw) {
		return InvalidJSONPreview(raw), false
	}
	s := sanitizer{in: raw, out: make([]byte, 0, min(len(raw), PreviewLimit)+16)}
	full := s.run()
	out := string(s.out)
	if full {
		out, _ = capUTF8(out, PreviewLimit)
		return out, true
	}
	// json.Valid does not check UTF-8 inside strings; DynamoDB does.
	return strings.ToValidUTF8(out, "\uFFFD"), false
}

// sanitizer walks JSON already known to be valid, copying it to out. Because
// the input is valid the walk needs no error handling; it stops (by panicking
// with errPreviewFull, recovered in run) once out passes PreviewLimit, so a
// 1 MB argument costs no more than a 16 KB one.
type sanitizer struct {
	in  []byte
	pos int
	out []byte
}

type previewFull struct{}

func (s *sanitizer) run() (full bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(previewFull); !ok {
				panic(r)
			}
			full = true
		}
	}()
	s.value(1)
	return false
}

func (s *sanitizer) emit(b ...byte) {
	if room := PreviewLimit + 1 - len(s.out); len(b) > room {
		// Copy only what can show: a 1 MB string must not cost 1 MB twice.
		s.out = append(s.out, b[:max(room, 0)]...)
		panic(previewFull{})
	}
	s.out = append(s.out, b...)
	if len(s.out) > PreviewLimit {
		panic(previewFull{})
	}
}

func (s *sanitizer) emitString(v string) {
	s.out = append(s.out, '"')
	s.out = append(s.out, v...)
	s.emit('"')
}

func (s *sanitizer) ws() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// value copies one value; depth is the nesting level a container here would have.
func (s *sanitizer) value(depth int) {
	s.ws()
	switch c := s.in[s.pos]; c {
	case '{', '[':
		if depth > MaxDepth {
			s.skipValue()
			s.emitString(DepthLimited)
			return
		}
		if c == '{' {
			s.object(depth)
		} else {
			s.array(depth)
		}
	case '"':
		start := s.pos
		s.skipString()
		inner := s.in[start+1 : s.pos-1]
		if bytes.IndexByte(inner, '\\') >= 0 {
			// "Bearer\u0020…" must not slip past the check.
			inner = []byte(decodeKey(s.in[start:s.pos]))
		}
		if isSecretValue(inner) {
			s.emitString(Redacted)
			return
		}
		s.emit(s.in[start:s.pos]...)
	default:
		start := s.pos
		for s.pos < len(s.in) && !isDelim(s.in[s.pos]) {
			s.pos++
		}
		s.emit(s.in[start:s.pos]...)
	}
}

func (s *sanitizer) object(depth int) {
	maskValue := s.namesSecret()
	s.pos++ // {
	s.emit('{')
	for {
		s.ws()
		if s.in[s.pos] == '}' {
			s.pos++
			s.emit('}')
			return
		}
		if s.in[s.pos] == ',' {
			s.pos++
			s.emit(',')
			s.ws()
		}
		start := s.pos
		s.skipString()
		key := s.in[start:s.pos]
		s.emit(key...)
		s.ws()
		s.pos++ // :
		s.emit(':')
		if k := decodeKey(key); IsSecretKey(k) || maskValue && isValueKey(k) {
			s.ws()
			s.skipValue()
			s.emitString(Redacted)
		} else {
			s.value(depth + 1)
		}
		s.ws()
	}
}

func (s *sanitizer) array(depth int) {
	s.pos++ // [
	s.emit('[')
	for {
		s.ws()
		switch s.in[s.pos] {
		case ']':
			s.pos++
			s.emit(']')
			return
		case ',':
			s.pos++
			s.emit(',')
		}
		s.value(depth + 1)
		s.ws()
	}
}

// namesSecret looks ahead through the object starting at pos, without
// copying, for a name/value pair: a "name" or "key" member (any case) whose
// string value names a secret, as in AWS and Kubernetes environment and tag
// lists ({"Name":"DB_PASSWORD","Value":"…"}). The object's "value" member is
// then masked wherever it stands. The look-ahead skips nested values, so
// the walk stays linear in the input times MaxDepth.
func (s *sanitizer) namesSecret() bool {
	save := s.pos
	defer func() { s.pos = save }()
	s.pos++ // {
	for {
		s.ws()
		switch s.in[s.pos] {
		case '}':
			return false
		case ',':
			s.pos++
			s.ws()
		}
		start := s.pos
		s.skipString()
		key := s.in[start:s.pos]
		s.ws()
		s.pos++ // :
		s.ws()
		vstart := s.pos
		s.skipValue()
		if s.in[vstart] == '"' && isNameKeyRaw(key) && IsSecretKey(decodeKey(s.in[vstart:s.pos])) {
			return true
		}
	}
}

func isNameKey(k string) bool { return strings.EqualFold(k, "name") || strings.EqualFold(k, "key") }

// isNameKeyRaw is isNameKey on a quoted key, allocating only for a key
// with escapes.
func isNameKeyRaw(quoted []byte) bool {
	if bytes.IndexByte(quoted, '\\') >= 0 {
		return isNameKey(decodeKey(quoted))
	}
	inner := quoted[1 : len(quoted)-1]
	return bytes.EqualFold(inner, nameWord) || bytes.EqualFold(inner, keyWord)
}

var nameWord, keyWord = []byte("name"), []byte("key")

func isValueKey(k string) bool { return strings.EqualFold(k, "value") }

// skipString moves past the string starting at pos (at its opening quote).
func (s *sanitizer) skipString() {
	s.pos++
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case '\\':
			s.pos += 2
		case '"':
			s.pos++
			return
		default:
			s.pos++
		}
	}
}

// skipValue moves past one value without copying it. It is iterative, so
// input nested ten thousand levels deep cannot exhaust the stack.
func (s *sanitizer) skipValue() {
	s.ws()
	switch s.in[s.pos] {
	case '"':
		s.skipString()
	case '{', '[':
		level := 0
		for s.pos < len(s.in) {
			switch s.in[s.pos] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				level++
			case '}', ']':
				level--
				if level == 0 {
					s.pos++
					return
				}
			}
			s.pos++
		}
	default:
		for s.pos < len(s.in) && !isDelim(s.in[s.pos]) {
			s.pos++
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// decodeKey unquotes a JSON key. Escapes are decoded so that "p\u0061ssword"
// cannot slip past the key check.
func decodeKey(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	var k string
	if err := json.Unmarshal(quoted, &k); err != nil {
		return string(quoted[1 : len(quoted)-1])
	}
	return k
}

// isSecretValue is [IsSecretValue] on the inside of a JSON string.
func isSecretValue(inner []byte) bool {
	return isSecretShaped(inner)
}

// IsSecretValue reports whether a value is secret-shaped whatever its key
// says: a bearer or basic credential ("Bearer …"), a JWT, a PEM private key,
// a token with a well-known secret prefix (sk-, ghp_, xoxb-, …) or a long
// high-entropy token (see highEntropy). It is the one place the
// project decides this: the preview, the free-text scrub of error
// attributes and the adapter's validation issues all ask it.
func IsSecretValue(v string) bool { return isSecretShaped(v) }

// IsCredentialShaped is [IsSecretValue] without the high-entropy guess: a
// value that is a credential by its form (an authorization scheme, a JWT,
// a PEM private key, a well-known secret prefix). For identifiers, which
// are often random and would look high-entropy: an id of this shape is
// refused rather than stored as a key.
func IsCredentialShaped(v string) bool {
	if len(v) > 7 && (hasPrefixFold(v, "bearer ") || hasPrefixFold(v, "basic ")) {
		return true
	}
	return isJWT(v) || isKnownSecretPrefix(v) || len(v) > 30 && containsPEM(v)
}

func isSecretShaped[T ~string | ~[]byte](v T) bool {
	if len(v) > 7 && (hasPrefixFold(v, "bearer ") || hasPrefixFold(v, "basic ")) {
		return true
	}
	if isJWT(v) || isKnownSecretPrefix(v) || highEntropy(v) {
		return true
	}
	return len(v) > 30 && containsPEM(v)
}

// containsPEM reports whether v holds a PEM private key header, without
// copying v (which can be a 1 MB argument).
func containsPEM[T ~string | ~[]byte](v T) bool {
	const marker = "PRIVATE KEY-----"
	switch x := any(v).(type) {
	case string:
		return strings.Contains(x, marker)
	case []byte:
		return bytes.Contains(x, []byte(marker))
	}
	return strings.Contains(string(v), marker)
}

// isJWT: three base64url parts, the header always starting {" → eyJ.
func isJWT[T ~string | ~[]byte](v T) bool {
	if len(v) <= 20 || v[0] != 'e' || v[1] != 'y' || v[2] != 'J' {
		return false
	}
	dots := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '.' {
			dots++
			continue
		}
		if !isB64URL(c) && c != '=' {
			return false
		}
	}
	return dots == 2
}

func isB64URL(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// secretPrefixes start tokens that are secrets by construction.
var secretPrefixes = []string{"sk-", "sk_live_", "sk_test_", "rk_live_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xoxs-", "AIza"}

func isKnownSecretPrefix[T ~string | ~[]byte](v T) bool {
	if len(v) < 16 || len(v) > 512 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isTokenChar(v[i]) {
			return false
		}
	}
	for _, p := range secretPrefixes {
		if len(v) > len(p) && string(v[:len(p)]) == p {
			return true
		}
	}
	return false
}

// isTokenChar: the characters of base64, base64url, hex and the usual
// token alphabets.
func isTokenChar(c byte) bool {
	return isB64URL(c) || c == '+' || c == '/' || c == '=' || c == '.' || c == '~'
}

// Thresholds of highEntropy.
const (
	minTokenLen     = 20
	maxTokenLen     = 4096
	minTokenEntropy = 3.5 // bits per character
)

// highEntropy reports whether s looks like a generated secret: one
// word of 20 to 4096 token characters (letters, digits, + / = - _ . ~)
// mixing upper case, lower case and digits, with a Shannon entropy of at
// least 3.5 bits per character. Hex strings, UUIDs, lower-case slugs and
// words do not qualify (they lack one of the three classes); an API key, an
// AWS secret access key or a random session id does.
func highEntropy[T ~string | ~[]byte](s T) bool {
	if len(s) < minTokenLen || len(s) > maxTokenLen {
		return false
	}
	var upper, lower, digit bool
	var counts [256]int
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isTokenChar(c) {
			return false
		}
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		}
		counts[c]++
	}
	if !upper || !lower || !digit {
		return false
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h >= minTokenEntropy
}

func hasPrefixFold[T ~string | ~[]byte](b T, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// InvalidJSONPreview is the preview of arguments that are not JSON: their
// length and SHA-256, never their text, which could hold anything (a
// mistyped token, a pasted credential).
func InvalidJSONPreview(raw []byte) string {
	sum := sha256.Sum256(raw)
	return fmt.Sprintf("[invalid JSON: %d bytes, sha256 %s]", len(raw), hex.EncodeToString(sum[:]))
}

// secretWords are single key words (after splitting, lower-cased) that name
// a secret, including the common run-together spellings of all-lower-case keys.
var secretWords = map[string]bool{
	"password": true, "passwords": true, "passwd": true, "pwd": true, "passphrase": true,
	"secret": true, "secrets": true, "token": true, "tokens": true,
	"apikey": true, "apikeys": true, "authorization": true, "bearer": true,
	"cookie": true, "cookies": true, "setcookie": true,
	"credential": true, "credentials": true, "creds": true,
	"otp": true, "totp": true, "signature": true, "jwt": true,
	"privatekey": true, "accesskey": true, "secretkey": true, "sessionid": true,
	"clientsecret": true, "accesstoken": true, "refreshtoken": true, "idtoken": true,
	"authtoken": true, "apitoken": true, "sessiontoken": true, "csrftoken": true, "xsrftoken": true,
}

// secretPairs are two consecutive words that together name a secret.
var secretPairs = map[[2]string]bool{
	{"api", "key"}: true, {"api", "keys"}: true, {"private", "key"}: true,
	{"access", "key"}: true, {"session", "id"}: true, {"session", "key"}: true,
	{"signing", "key"}: true, {"encryption", "key"}: true, {"master", "key"}: true,
}

// tokenCounters are words that, next to "token(s)", make the key a count of
// LLM tokens (maxTokens, max_output_tokens, tokenCount), not a credential.
var tokenCounters = map[string]bool{
	"max": true, "min": true, "num": true, "count": true, "total": true, "limit": true,
	"input": true, "output": true, "prompt": true, "completion": true, "usage": true, "budget": true,
}

// authQualifiers follow "auth" in keys whose value is the credential itself
// (authHeader, auth_code); "auth" followed by anything else (authMethod,
// auth_type, authProvider) describes the mechanism and is kept.
var authQualifiers = map[string]bool{
	"header": true, "code": true, "value": true, "data": true, "string": true, "info": true,
}

// IsSecretKey reports whether an object key names a secret. The key is split
// into words at '_', '-', '.', spaces and camelCase boundaries ("APIKey" →
// api key) and matched case-insensitively word by word, so "author" or
// "tokenizer" do not match while "x-api-key", "clientSecret" and
// "AWS_SECRET_ACCESS_KEY" do. "auth" counts as a secret when it is the last
// word ("auth", "basicAuth") or followed by a word like header or code; see
// docs/audit.md for the full list.
func IsSecretKey(key string) bool {
	var buf [8]string
	words := splitWords(key, buf[:0])
	for i, w := range words {
		prev, next := "", ""
		if i > 0 {
			prev = words[i-1]
		}
		if i+1 < len(words) {
			next = words[i+1]
		}
		switch {
		case w == "token" || w == "tokens":
			if !tokenCounters[prev] && !tokenCounters[next] {
				return true
			}
		case secretWords[w]:
			return true
		case w == "auth":
			if next == "" || authQualifiers[next] {
				return true
			}
		case next != "" && secretPairs[[2]string{w, next}]:
			return true
		}
	}
	return false
}

// splitWords appends the lower-cased words of key to words. ASCII keys (the
// common case) are split in place, costing at most the one lower-casing
// allocation; others go through runes.
func splitWords(key string, words []string) []string {
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		return splitRuneWords(key, words)
	}
	lower := strings.ToLower(key)
	start := -1
	for i := 0; i <= len(key); i++ {
		var c byte
		if i < len(key) {
			c = key[i]
		}
		isUpper, isLower, isDigit := c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9'
		if !isUpper && !isLower && !isDigit {
			if start >= 0 {
				words = append(words, lower[start:i])
			}
			start = -1
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := key[i-1]
		prevLower, prevUpper, prevDigit := prev >= 'a' && prev <= 'z', prev >= 'A' && prev <= 'Z', prev >= '0' && prev <= '9'
		nextLower := i+1 < len(key) && key[i+1] >= 'a' && key[i+1] <= 'z'
		if isUpper && (prevLower || prevDigit || (prevUpper && nextLower)) {
			words = append(words, lower[start:i])
			start = i
		}
	}
	return words
}

func splitRuneWords(key string, words []string) []string {
	rs := []rune(key)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			words = append(words, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		if unicode.IsUpper(r) {
			// fooBar → foo|Bar; APIKey → API|Key (an upper followed by a lower
			// starts a word after a run of uppers).
			if unicode.IsLower(prev) || unicode.IsDigit(prev) ||
				(unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				flush(i)
				start = i
			}
		}
	}
	flush(len(rs))
	return words
}

// capUTF8 cuts s to at most n bytes without splitting a rune and replaces
// invalid UTF-8, which DynamoDB would reject.
func capUTF8(s string, n int) (string, bool) {
	cut := false
	if len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s, cut = s[:i], true
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		if len(s) > n { // each replacement can grow the text
			return capUTF8(s, n)
		}
	}
	return s, cut
}
