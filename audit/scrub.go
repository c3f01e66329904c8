package audit

import (
	"encoding/json"
	"strings"
)

// Free text (an error message, a raw error, a validation issue) is scrubbed
// word by word: what [IsSecretValue] calls secret-shaped is masked wherever
// it stands, and so is the value of a "key=value", "key: value" or
// "\"key\":\"value\"" whose key names a secret (see [IsSecretKey]). The
// expressions are compiled on first use (lazyRegexp), not at cold start.
var (
	// An authorization scheme and its credential.
	reAuthScheme = lazyRegexp(`(?i)\b(bearer|basic)(\s+)[A-Za-z0-9+/=._~-]+`)
	// A key and its separator (=, :, quoted or escaped-quoted); the value
	// follows. The value is not part of the match, so a value can itself
	// start the next key ("dial: password=x").
	reKeySep = lazyRegexp(`([A-Za-z_][A-Za-z0-9_.-]{0,63})(\\?"?\s*[:=]\s*\\?"?)`)
	// A word of token characters long enough to be a secret.
	reTokenWord = lazyRegexp(`[A-Za-z0-9+/=._~-]{16,}`)
	// A PEM private key, to its end or the end of the text.
	rePEM = lazyRegexp(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)
)

// SanitizeText masks what the sanitiser would mask in free text and caps
// the result at limit bytes (valid UTF-8, cut on a rune boundary). Text
// that is a JSON document is sanitized as JSON instead (see
// [SanitizeJSON]). The scrub is idempotent.
func SanitizeText(s string, limit int) string {
	if s == "" {
		return s
	}
	if t := strings.TrimSpace(s); len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return string(SanitizeJSON([]byte(t), limit))
	}
	// Bound the regexp work first; masking can grow a short value, so cap
	// again. The first cut ends on a blank: a token cut in two might no
	// longer look like the secret it is.
	s, cut := capUTF8(s, 2*limit+64)
	if cut {
		if i := strings.LastIndexAny(s, " \t\r\n"); i >= 0 {
			s = s[:i]
		} else {
			s = ""
		}
	}
	s = scrubText(s)
	s, _ = capUTF8(s, limit)
	return s
}

// scrubText masks a text's secrets. Each expression runs only on a text it
// could match (what it cannot match without is checked first: a separator,
// a scheme's name, a long enough word): most attribution text (a user
// agent, a client name, a method) matches none, and three regexp passes
// over each of a row's dozen fields were most of the cost of scrubbing it.
// FuzzScrubTextSkipsOnlyWhatCannotMatch holds the result to running every
// expression.
func scrubText(s string) string {
	if strings.Contains(s, "PRIVATE KEY-----") {
		s = rePEM().ReplaceAllLiteralString(s, Redacted)
	}
	if strings.ContainsAny(s, ":=") {
		s = maskKeyValues(s)
	}
	if mayNameScheme(s) {
		s = reAuthScheme().ReplaceAllString(s, "${1}${2}"+Redacted)
	}
	if !hasTokenRun(s, 16) {
		return s
	}
	return reTokenWord().ReplaceAllStringFunc(s, func(w string) string {
		if IsSecretValue(w) {
			return Redacted
		}
		return w
	})
}

// mayNameScheme: s could hold reAuthScheme's "bearer" or "basic" in any
// case. Case-insensitive matching in Go's regexp folds Unicode too: 'ſ'
// (U+017F, long s) matches 's', so a text with one is left to the
// expression.
func mayNameScheme(s string) bool {
	if strings.ContainsRune(s, 'ſ') {
		return true
	}
	for i := 0; i+5 <= len(s); i++ {
		if s[i]|0x20 != 'b' {
			continue
		}
		if w := s[i+1:]; (len(w) >= 5 && equalFoldASCII(w[:5], "earer")) || equalFoldASCII(w[:4], "asic") {
			return true
		}
	}
	return false
}

// equalFoldASCII reports whether a equals lower, an ASCII lower-case word,
// ignoring ASCII case.
func equalFoldASCII(a, lower string) bool {
	if len(a) != len(lower) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// hasTokenRun: s has n token characters in a row (isTokenChar's class is
// reTokenWord's).
func hasTokenRun(s string, n int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if isTokenChar(s[i]) {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// maskKeyValues masks the value after every key naming a secret.
func maskKeyValues(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is settled
	for _, m := range reKeySep().FindAllStringSubmatchIndex(s, -1) {
		if m[0] < done || !IsSecretKey(s[m[2]:m[3]]) {
			continue
		}
		start := m[1]
		if strings.HasPrefix(s[start:], Redacted) {
			continue
		}
		end := start
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'\\,;&)}]", rune(s[end])) {
			end++
		}
		if end == start {
			continue
		}
		if isScheme(s[start:end]) && end+1 < len(s) && s[end] == ' ' && isTokenChar(s[end+1]) {
			// "Authorization: Token abc": the credential is the second word.
			end++
			for end < len(s) && isTokenChar(s[end]) {
				end++
			}
		}
		b.WriteString(s[done:start])
		b.WriteString(Redacted)
		done = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// isScheme: a short word of letters, like an HTTP authorization scheme.
func isScheme(w string) bool {
	if len(w) == 0 || len(w) > 12 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// SanitizeJSON sanitizes a JSON document like [SanitizeArgs] and also
// scrubs every string value as free text (see [SanitizeText]): an error
// detail can quote a secret inside a longer message. Invalid JSON becomes a
// JSON string of the scrubbed text. The result is valid, compact JSON of at
// most limit bytes; a document that would not fit becomes a JSON string
// saying so.
func SanitizeJSON(doc []byte, limit int) json.RawMessage {
	if !json.Valid(doc) {
		return jsonString(SanitizeText(string(doc), max(limit-64, 0)))
	}
	preview, trunc := SanitizeArgs(doc)
	dec := json.NewDecoder(strings.NewReader(preview))
	dec.UseNumber() // 2^53+1 stays 2^53+1
	var v any
	if trunc || dec.Decode(&v) != nil {
		return jsonString("[details cut: too long]")
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(scrubStrings(v)) != nil || buf.Len() > limit+1 {
		return jsonString("[details cut: too long]")
	}
	return json.RawMessage(strings.TrimSuffix(buf.String(), "\n"))
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func scrubStrings(v any) any {
	switch v := v.(type) {
	case string:
		return scrubText(v)
	case map[string]any:
		for k, e := range v {
			v[k] = scrubStrings(e)
		}
	case []any:
		for i, e := range v {
			v[i] = scrubStrings(e)
		}
	}
	return v
}

// scrubRow runs every free-text attribute of a row through the sanitiser
// before it is written or printed: defence in depth, whatever built the
// row. A replayed row's preview was made by another process (or written by
// hand into a log): it is sanitized again, as JSON when it is JSON and as
// text when it is a truncated preview.
func scrubRow(r *Row, replayed bool) {
	// What the caller sent about itself (headers, client info, _meta, a
	// claimed identity) is attribution text it chose: a client can put a
	// credential in its User-Agent or Mcp-Session-Id as easily as in an
	// argument.
	for _, p := range []*string{
		&r.SessionID, &r.CallerUserAgent, &r.ClientName, &r.ClientVersion,
		&r.LinkedTraceparent, &r.UnverifiedCaller, &r.CallerRoleSession,
		&r.ProtocolVersion, &r.MCPMethod, &r.MCPEra,
	} {
		*p = SanitizeText(*p, maxShortField)
	}
	r.ErrorMessage = SanitizeText(r.ErrorMessage, maxErrorMessage)
	r.RawError = SanitizeText(r.RawError, maxRawError)
	if len(r.ErrorDetails) > 0 {
		r.ErrorDetails = SanitizeJSON(r.ErrorDetails, maxErrorDetails)
	}
	if replayed && r.ArgsPreview != "" && !strings.HasPrefix(r.ArgsPreview, "[invalid JSON: ") {
		if json.Valid([]byte(r.ArgsPreview)) {
			r.ArgsPreview, _ = SanitizeArgs([]byte(r.ArgsPreview))
		} else {
			// A truncated preview: no longer JSON, scrubbed as text.
			r.ArgsPreview = SanitizeText(r.ArgsPreview, PreviewLimit)
		}
	}
}
