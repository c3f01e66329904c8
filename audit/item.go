package audit

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Field limits. Together they keep an item below ~150 KB, so neither
// DynamoDB's 400 KB item limit nor CloudWatch Logs' 256 KB event limit (for a
// fallback line) can be reached, whatever a tool or a caller sends.
const (
	maxShortField   = 1 << 10  // ids, names, user agent, …
	maxErrorMessage = 4 << 10  // what the caller was told
	maxRawError     = 8 << 10  // the raw error, which may embed a payload
	maxErrorDetails = 16 << 10 // serialized details
	maxDimensions   = 50
	maxDimKey       = 128
	maxDimValue     = 1 << 10
	maxItemBytes    = 350 << 10 // last-resort guard, below DynamoDB's 400 KB
	maxFallbackLine = 200 << 10 // below CloudWatch Logs' 256 KB event limit
)

// StartedAtLayout formats startedAt: RFC 3339 in UTC with exactly nine
// fractional digits. time.RFC3339Nano drops trailing zeros, which makes
// "…05Z" sort after "…05.1Z"; a fixed width keeps string order (the GSI sort
// key) equal to time order.
const StartedAtLayout = "2006-01-02T15:04:05.000000000Z07:00"

// clampRow applies the field limits in place, cutting on rune boundaries.
func clampRow(r *Row, entityDimension string) {
	for _, p := range []*string{
		&r.CallID, &r.Status, &r.Tool, &r.Source, &r.MCPEra, &r.MCPMethod, &r.ProtocolVersion,
		&r.ClientName, &r.ClientVersion, &r.MCPOutcome, &r.CallerSubject, &r.CallerAuthMethod, &r.CallerIssuer,
		&r.CallerClientID, &r.CallerIP, &r.CallerUserAgent, &r.UnverifiedCaller, &r.Tenant, &r.SessionID,
		&r.TraceID, &r.SpanID, &r.ParentSpanID, &r.Sampled, &r.LinkedTraceparent, &r.Stage,
		&r.ErrorCode, &r.LambdaRequestID, &r.FunctionName, &r.FunctionVersion,
		&r.AttemptID, &r.Outcome, &r.LateOutcome, &r.LateErrorCode, &r.ArgsSHA256, &r.ResultSHA256,
	} {
		*p, _ = capUTF8(*p, maxShortField)
	}
	r.ErrorMessage, _ = capUTF8(r.ErrorMessage, maxErrorMessage)
	r.RawError, _ = capUTF8(r.RawError, maxRawError)
	r.ArgsPreview, _ = capUTF8(r.ArgsPreview, PreviewLimit)
	r.ErrorDetails = clampDetails(r.ErrorDetails)
	for _, o := range []*Object{r.ArgsObject, r.ResultObject} {
		if o != nil {
			o.Bucket, _ = capUTF8(o.Bucket, maxShortField)
			o.Key, _ = capUTF8(o.Key, maxShortField)
			o.VersionID, _ = capUTF8(o.VersionID, maxShortField)
		}
	}
	r.Dimensions = clampDimensions(r.Dimensions, entityDimension)
}

// shrinkForLog cuts a row whose fallback line would be too long: the bulky,
// free-text fields get small caps and only the indexed entity dimension is
// kept. Ids, outcome and times, what the row is evidence of, stay whole.
func shrinkForLog(r *Row, entityDimension string) {
	r.ArgsPreview, _ = capUTF8(r.ArgsPreview, 2<<10)
	r.ArgsTruncated = true
	r.ErrorMessage, _ = capUTF8(r.ErrorMessage, 1<<10)
	r.RawError, _ = capUTF8(r.RawError, 2<<10)
	if len(r.ErrorDetails) > 2<<10 {
		r.ErrorDetails = json.RawMessage(`"[cut from the log line]"`)
	}
	if v, ok := r.Dimensions[entityDimension]; ok {
		r.Dimensions = map[string]string{entityDimension: v}
	} else {
		r.Dimensions = nil
	}
	for _, p := range []*string{&r.CallerUserAgent, &r.ClientName, &r.ClientVersion, &r.LinkedTraceparent, &r.Stage} {
		*p, _ = capUTF8(*p, 256)
	}
}

// clampDetails keeps details valid, compact JSON of bounded size. Details
// that are not JSON, or too long, are kept as a JSON string of their text so
// the row still says something.
func clampDetails(d json.RawMessage) json.RawMessage {
	if len(d) == 0 {
		return nil
	}
	if json.Valid(d) {
		var buf bytes.Buffer
		if json.Compact(&buf, d) == nil && buf.Len() <= maxErrorDetails {
			return buf.Bytes()
		}
	}
	s, _ := capUTF8(string(d), maxErrorDetails-64)
	b, _ := json.Marshal(s)
	return b
}

func clampDimensions(d map[string]string, entityDimension string) map[string]string {
	if len(d) == 0 {
		return d
	}
	over := len(d) > maxDimensions
	for k, v := range d {
		if len(k) > maxDimKey || len(v) > maxDimValue || k == "" {
			over = true
			break
		}
	}
	if !over {
		return d
	}
	// The indexed entity dimension first, then sorted, so which dimensions
	// survive does not depend on map order and a retried call writes the
	// same row.
	keys := make([]string, 0, len(d))
	for k := range d {
		if k != "" && k != entityDimension {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if _, ok := d[entityDimension]; ok {
		keys = append([]string{entityDimension}, keys...)
	}
	out := make(map[string]string, min(len(keys), maxDimensions))
	for _, k := range keys {
		if len(out) == maxDimensions {
			break
		}
		ck, _ := capUTF8(k, maxDimKey)
		out[ck], _ = capUTF8(d[k], maxDimValue)
	}
	return out
}

// itemFor builds the DynamoDB item of a prepared row: the row's own
// attributes plus the computed index attributes.
func itemFor(r *Row, entityDimension string) map[string]types.AttributeValue {
	item := rowAttributes(r)
	item["startedAt"] = &types.AttributeValueMemberS{Value: r.StartedAt.UTC().Format(StartedAtLayout)}
	item[KeyAttribute] = &types.AttributeValueMemberS{Value: r.Key()}
	// Index keys may not be empty strings: absent means "not in the index".
	// The caller key names the principal, not just its subject: the same
	// subject from another issuer or tenant is someone else.
	if r.CallerSubject != "" {
		item["callerKey"] = &types.AttributeValueMemberS{Value: callerOf(r).Key()}
	}
	if v := r.Dimensions[entityDimension]; v != "" {
		item["entityKey"] = &types.AttributeValueMemberS{Value: EntityKey(entityDimension, v)}
	}
	if len(r.ErrorDetails) > 0 {
		item["errorDetails"] = &types.AttributeValueMemberS{Value: string(r.ErrorDetails)}
	}
	if itemSize(item) > maxItemBytes {
		// Unreachable with the field limits above; kept so that a future
		// field cannot make a row unwritable.
		delete(item, "argsPreview")
		delete(item, "errorDetails")
		delete(item, "dimensions")
		item["argsTruncated"] = &types.AttributeValueMemberBOOL{Value: true}
	}
	return item
}

// EntityKey is the byEntity index key of a dimension: "<name>#<value>".
func EntityKey(dimension, value string) string { return dimension + "#" + value }

// itemSize approximates DynamoDB's item size: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)/2 + 2
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return 1
}

// rowFromItem is the inverse of itemFor, for queries.
func rowFromItem(item map[string]types.AttributeValue) (Row, error) {
	var r Row
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return r, err
	}
	if s, ok := item["startedAt"].(*types.AttributeValueMemberS); ok {
		if t, err := time.Parse(time.RFC3339Nano, s.Value); err == nil {
			r.StartedAt = t
		}
	}
	if s, ok := item["errorDetails"].(*types.AttributeValueMemberS); ok {
		r.ErrorDetails = json.RawMessage(s.Value)
	}
	return r, nil
}
