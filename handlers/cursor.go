package handlers

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// cursorVersion lets a later release change the cursor's shape and still
// recognise, and reject with a clear message, the cursors of this one.
const cursorVersion = 1

// maxCursorLen bounds the work spent decoding a cursor; a real one is about
// 150 characters.
const maxCursorLen = 512

// cursorKey is the position a list page ended at: the ChannelIndex key of its
// last item (channel, createdAt) plus the table key (id), which is exactly
// what DynamoDB needs as ExclusiveStartKey for a query on that index.
//
// Sum is a checksum of the other fields. It is not a signature (anyone can
// compute it; a forged position is harmless, see the package doc): it is
// there because the cursor passes through a model, and a model that retypes
// a long opaque string and changes one character would otherwise get a page
// from somewhere else instead of an error it can act on.
type cursorKey struct {
	Version   int    `json:"v"`
	Channel   string `json:"c"`
	CreatedAt string `json:"t"`
	ID        string `json:"i"`
	Sum       string `json:"s"`
}

// sum is the checksum of c's position fields: 8 bytes of SHA-256, hex.
func (c cursorKey) sum() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s\x00%s\x00%s", c.Version, c.Channel, c.CreatedAt, c.ID))
	return hex.EncodeToString(h[:8])
}

var idPattern = regexp.MustCompile(`^` + idRegexp + `$`)

// encodeCursor returns the opaque cursor for c: base64url (unpadded, so it
// travels in URLs and JSON unescaped) of its JSON.
func encodeCursor(c cursorKey) string {
	c.Version = cursorVersion
	c.Sum = c.sum()
	b, _ := json.Marshal(c) // four strings and an int: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor checks s thoroughly before it becomes an ExclusiveStartKey:
// DynamoDB answers a malformed start key with a ValidationException, which
// would reach the caller scrubbed as INTERNAL_SERVER_ERROR and blame the
// service for the caller's mistake. Every failure wraps ErrBadCursor.
func decodeCursor(s, channel string) (cursorKey, error) {
	bad := func(why string) (cursorKey, error) {
		return cursorKey{}, fmt.Errorf("%w: %s", ErrBadCursor, why)
	}
	if len(s) > maxCursorLen {
		return bad("too long")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c cursorKey
	if err := dec.Decode(&c); err != nil || dec.More() {
		return bad("not a cursor")
	}
	switch {
	case c.Sum != c.sum():
		return bad("damaged (pass nextCursor back exactly as returned)")
	case c.Version != cursorVersion:
		return bad("from another version; start again without a cursor")
	case c.Channel != channel:
		return bad("it belongs to another channel")
	case !idPattern.MatchString(c.ID):
		return bad("malformed position")
	}
	t, err := time.Parse(createdAtLayout, c.CreatedAt)
	if err != nil || t.Format(createdAtLayout) != c.CreatedAt {
		return bad("malformed position")
	}
	return c, nil
}

// key is c as a ChannelIndex ExclusiveStartKey.
func (c cursorKey) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"id":        &types.AttributeValueMemberS{Value: c.ID},
		"channel":   &types.AttributeValueMemberS{Value: c.Channel},
		"createdAt": &types.AttributeValueMemberS{Value: c.CreatedAt},
	}
}

// cursorFromKey reads a LastEvaluatedKey of a ChannelIndex query.
func cursorFromKey(k map[string]types.AttributeValue) (cursorKey, error) {
	str := func(name string) string {
		if v, ok := k[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	c := cursorKey{Channel: str("channel"), CreatedAt: str("createdAt"), ID: str("id")}
	if c.Channel == "" || c.CreatedAt == "" || c.ID == "" {
		return cursorKey{}, fmt.Errorf("handlers: unexpected LastEvaluatedKey shape (%d attributes)", len(k))
	}
	return c, nil
}
