package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIsSecretKey(t *testing.T) {
	secret := []string{
		"password", "Password", "PASSWORD", "userPassword", "new_password", "db-passwd", "pwd",
		"secret", "clientSecret", "client_secret", "AWS_SECRET_ACCESS_KEY", "secretKey",
		"token", "accessToken", "refresh_token", "id-token", "accesstoken", "X-Auth-Token", "nextToken",
		"apiKey", "api_key", "x-api-key", "APIKey", "apikey", "API_KEYS",
		"privateKey", "private_key", "accessKey", "aws_access_key_id",
		"authorization", "Authorization", "proxy-authorization", "bearer", "bearerToken",
		"cookie", "Set-Cookie", "cookies", "credential", "credentials", "gitCredentials",
		"sessionId", "session_id", "SESSIONID", "sessionKey", "otp", "totp", "signature", "X-Amz-Signature",
		"auth", "Auth", "basicAuth", "proxy_auth", "authHeader", "auth_code",
		"jwt", "passphrase", "signingKey", "encryption_key",
		"p\u0061ssword",
	}
	for _, k := range secret {
		if !IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false, want true", k)
		}
	}
	plain := []string{
		"id", "name", "channel", "text", "author", "authority", "authMethod", "auth_type", "authProvider",
		"tokenizer", "maxTokens", "max_tokens", "max_output_tokens", "tokenCount", "session", "sessionName",
		"key", "keys", "primaryKey", "partition_key", "publicKey", "secretary", "passage", "cursor",
		"signed", "cookieless", "description", "",
	}
	for _, k := range plain {
		if IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true, want false", k)
		}
	}
	// The ASCII fast path splits exactly like the general one.
	for _, k := range append(append(secret, plain...), "HTTPServer2Go", "a__b--c", "ABC", "aB", "Ab", "x9Y") {
		fast, slow := splitWords(k, nil), splitRuneWords(k, nil)
		if strings.Join(fast, "|") != strings.Join(slow, "|") {
			t.Errorf("splitWords(%q) = %q, rune path %q", k, fast, slow)
		}
	}
	if IsSecretKey("Пароль") || !IsSecretKey("tökenPassword") {
		t.Errorf("non-ASCII keys")
	}
}

func TestSanitizeArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, ``},
		{`  `, ``},
		{`{}`, `{}`},
		{`null`, `null`},
		{`{ "a" : 1 , "b" : [ 1 , 2 , { "c" : true } ] }`, `{"a":1,"b":[1,2,{"c":true}]}`},
		{`{"password":"x","user":"u"}`, `{"password":"[redacted]","user":"u"}`},
		{`{"creds":{"user":"u","pass":"p"},"keep":1}`, `{"creds":"[redacted]","keep":1}`},
		{`{"apiKey":[1,2,3],"list":[{"token":"t"},{"ok":"y"}]}`, `{"apiKey":"[redacted]","list":[{"token":"[redacted]"},{"ok":"y"}]}`},
		{`{"p\u0061ssword":"x"}`, `{"p\u0061ssword":"[redacted]"}`},
		{`{"header":"Bearer abc.def","h2":"basic dXNlcjpwYXNz","note":"bearer of news"}`, `{"header":"[redacted]","h2":"[redacted]","note":"[redacted]"}`},
		{`["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln","eyJ not a jwt"]`, `["[redacted]","eyJ not a jwt"]`},
		{`{"s":"quote \" and \\ and ] } ,","n":-1.5e+3}`, `{"s":"quote \" and \\ and ] } ,","n":-1.5e+3}`},
		{`not json {"password":"x"`, `[invalid JSON: 24 bytes, sha256 8b7c4e44825b02cdbcf078199ee0916e9fffbfc5c472781d6b5ca8e1174f5d4c]`},
		// Name/value pairs (L8): the value is masked when the name names a secret.
		{`{"env":[{"name":"DB_PASSWORD","value":"p1"},{"name":"REGION","value":"eu"}]}`, `{"env":[{"name":"DB_PASSWORD","value":"[redacted]"},{"name":"REGION","value":"eu"}]}`},
		{`[{"Value":"v1","Name":"apiKey"},{"Key":"Owner","Value":"ops"},{"Key":"x-api-key","Value":{"a":1}}]`, `[{"Value":"[redacted]","Name":"apiKey"},{"Key":"Owner","Value":"ops"},{"Key":"x-api-key","Value":"[redacted]"}]`},
		{`{"key":"sessionToken","value":"t","other":"o"}`, `{"key":"sessionToken","value":"[redacted]","other":"o"}`},
		{`{"name":"password"}`, `{"name":"password"}`},
		// Secret-shaped values wherever they stand.
		{`{"id":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY","uuid":"123e4567-e89b-12d3-a456-426614174000"}`, `{"id":"[redacted]","uuid":"123e4567-e89b-12d3-a456-426614174000"}`},
		{`["ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","plain-words-and-more-words"]`, `["[redacted]","plain-words-and-more-words"]`},
		{`"just a string"`, `"just a string"`},
	} {
		got, trunc := SanitizeArgs([]byte(tc.in))
		if got != tc.want || trunc {
			t.Errorf("SanitizeArgs(%s) = %s, %v; want %s", tc.in, got, trunc, tc.want)
		}
	}
}

func TestSanitizeArgsDepthLimit(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 30) + `1` + strings.Repeat(`}`, 30)
	got, trunc := SanitizeArgs([]byte(deep))
	want := strings.Repeat(`{"a":`, MaxDepth) + `"[depth limit]"` + strings.Repeat(`}`, MaxDepth)
	if got != want || trunc {
		t.Errorf("got %s", got)
	}
	// Far deeper than any stack would like, in an array: skipped iteratively.
	deeper := `[` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `,"tail"]`
	got, _ = SanitizeArgs([]byte(deeper))
	if want := strings.Repeat(`[`, MaxDepth) + `"[depth limit]"` + strings.Repeat(`]`, MaxDepth-1) + `,"tail"]`; got != want {
		t.Errorf("got %s", got)
	}
}

func TestSanitizeArgsTruncatesOnRuneBoundary(t *testing.T) {
	for _, in := range []string{
		`{"x":"` + strings.Repeat("€", PreviewLimit) + `"}`,
		`[` + strings.Repeat(`"ab",`, PreviewLimit) + `"z"]`,
	} {
		got, trunc := SanitizeArgs([]byte(in))
		if !trunc || len(got) > PreviewLimit || len(got) < PreviewLimit-3 || !utf8.ValidString(got) {
			t.Errorf("%.20s…: %d bytes, truncated %v, valid %v", in, len(got), trunc, utf8.ValidString(got))
		}
	}
}

func TestIsSecretValue(t *testing.T) {
	for _, v := range []string{
		"Bearer x1", "basic dXNlcjpwYXNz", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
		"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "sk9XqT7bLw2RmZ4vYc8NpK3sHd6JfG1a",
		"sk-proj-abcdefghijklmnop", "xoxb-1234567890-abcdefghij", "-----BEGIN RSA PRIVATE KEY-----\nMIIE",
	} {
		if !IsSecretValue(v) {
			t.Errorf("IsSecretValue(%q) = false", v)
		}
	}
	for _, v := range []string{
		"", "hello world", "123e4567-e89b-12d3-a456-426614174000", "0123456789abcdef0123456789abcdef",
		"broadcast-weekly-digest-2026", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "2026-11-29T12:00:00.000000000Z",
		"1-5f84c7a1-0123456789abcdef01234567", "arn:aws:lambda:us-east-1:123456789012:function:Echo",
	} {
		if IsSecretValue(v) {
			t.Errorf("IsSecretValue(%q) = true", v)
		}
	}
}

func TestSanitizeText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain error: connection refused", "plain error: connection refused"},
		{"auth failed: Authorization: Bearer abc.def-ghi", "auth failed: Authorization: [redacted]"},
		{"auth failed: Authorization: Token abc.def-ghi now", "auth failed: Authorization: [redacted] now"},
		{"header Bearer abc.def-ghi rejected", "header Bearer [redacted] rejected"},
		{`dial: password=hunter2 user=bob`, `dial: password=[redacted] user=bob`},
		{`body {"token":"t0k","id":"x"} bad`, `body {"token":"[redacted]","id":"x"} bad`},
		{`quoted \"apiKey\":\"k3y\" here`, `quoted \"apiKey\":\"[redacted]\" here`},
		{`type: [sk9XqT7bLw2RmZ4vYc8NpK3sHd6JfG1a] has type "array"`, `type: [[redacted]] has type "array"`},
		{`{"message":"x password=p","n":1}`, `{"message":"x password=[redacted]","n":1}`},
		{"key -----BEGIN PRIVATE KEY-----\nMIIabc\n-----END PRIVATE KEY----- end", "key [redacted] end"},
	} {
		got := SanitizeText(tc.in, 1000)
		if got != tc.want {
			t.Errorf("SanitizeText(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if again := SanitizeText(got, 1000); again != got {
			t.Errorf("not idempotent: %q → %q", got, again)
		}
	}
}

func TestSanitizeArgsInvalidUTF8(t *testing.T) {
	got, _ := SanitizeArgs([]byte("{\"a\":\"\xff\xfe\"}"))
	if !utf8.ValidString(got) || !json.Valid([]byte(got)) {
		t.Errorf("got %q", got)
	}
}

func FuzzSanitizeArgs(f *testing.F) {
	for _, s := range []string{
		`{"password":"x","a":[1,{"token":"t"}]}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"k":"\u00e9\ud83d\ude00","Bearer":"Bearer x"}`,
		`not json`,
		"{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, trunc := SanitizeArgs(in)
		if len(got) > PreviewLimit {
			t.Fatalf("preview %d bytes", len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if !json.Valid(in) || trunc {
			return
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("valid input %q gave invalid preview %q", in, got)
		}
		// Sanitizing is idempotent, and no secret key keeps its value.
		if again, _ := SanitizeArgs([]byte(got)); again != got {
			t.Fatalf("not idempotent: %q → %q", got, again)
		}
		var v any
		if json.Unmarshal([]byte(got), &v) == nil {
			checkRedacted(t, v, 1)
		}
	})
}

func checkRedacted(t *testing.T, v any, depth int) {
	switch v := v.(type) {
	case string:
		if IsSecretValue(v) {
			t.Fatalf("secret-shaped value kept: %q", v)
		}
	case map[string]any:
		named := false
		for k, e := range v {
			if n, ok := e.(string); ok && isNameKey(k) && IsSecretKey(n) {
				named = true
			}
		}
		for k, e := range v {
			if (IsSecretKey(k) || named && isValueKey(k)) && e != Redacted {
				t.Fatalf("key %q kept %v", k, e)
			}
			checkRedacted(t, e, depth+1)
		}
	case []any:
		for _, e := range v {
			checkRedacted(t, e, depth+1)
		}
	}
}

// secretArgs builds arguments that hold secret where the sanitiser must
// mask it: under a key naming a secret, as the value of a name/value pair
// with that name, after "Bearer ", beside doc (any JSON, or a string).
func secretArgs(doc, key, secret string) []byte {
	var d any = doc
	if json.Valid([]byte(doc)) {
		d = json.RawMessage(doc)
	}
	b, err := json.Marshal(map[string]any{
		"doc": d, key: secret, "h": "Bearer " + secret,
		"env": []any{map[string]any{"name": key, "value": secret}},
	})
	if err != nil {
		return nil
	}
	return b
}

// FuzzSanitizeMasksSecrets: whatever surrounds it, a secret in a masked
// position never reaches the preview, and free text around a secret never
// shows it after SanitizeText.
func FuzzSanitizeMasksSecrets(f *testing.F) {
	f.Add(`{"a":1}`, "password", "hunter2hunter2", "error: ")
	f.Add(`[{"name":"x","value":"y"}]`, "x-api-key", "k3y-k3y-k3y", `{"note":"`)
	f.Add(`"just text"`, "clientSecret", "0123456789", "dial tcp: ")
	f.Add(`{"Key":"token","Value":"v"}`, "AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG", "")
	f.Fuzz(func(t *testing.T, doc, key, secret, text string) {
		if len(secret) < 8 || !IsSecretKey(key) || !isTokenWord(secret) || strings.Contains(doc+key+text, secret) {
			return
		}
		in := secretArgs(doc, key, secret)
		if in == nil {
			return
		}
		// The secret must not occur in what surrounds it either.
		base, _ := SanitizeArgs(secretArgs(doc, key, "Z"))
		if strings.Contains(base, secret) {
			return
		}
		got, _ := SanitizeArgs(in)
		if strings.Contains(got, secret) {
			t.Fatalf("preview shows the secret %q:\n%s", secret, got)
		}
		if len(got) > PreviewLimit || !utf8.ValidString(got) {
			t.Fatalf("preview %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
		}

		free := text + " password=" + secret + " " + text + " Authorization: Bearer " + secret + " " + text
		if strings.Contains(SanitizeText(strings.ReplaceAll(free, secret, "Z"), 2000), secret) {
			return
		}
		out := SanitizeText(free, 2000)
		if strings.Contains(out, secret) {
			t.Fatalf("text shows the secret %q:\n%s", secret, out)
		}
		if len(out) > 2000 || !utf8.ValidString(out) {
			t.Fatalf("text %d bytes, valid UTF-8 %v", len(out), utf8.ValidString(out))
		}
		if again := SanitizeText(out, 2000); again != out {
			t.Fatalf("SanitizeText not idempotent: %q → %q", out, again)
		}
	})
}

// isTokenWord: a secret the text scrub can see as one word.
func isTokenWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func TestSanitizeArgsEscapedSecret(t *testing.T) {
	got, _ := SanitizeArgs([]byte(`{"h":"Bearer\u0020abc","j":"\u0065yJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"}`))
	if got != `{"h":"[redacted]","j":"[redacted]"}` {
		t.Errorf("got %s", got)
	}
}
