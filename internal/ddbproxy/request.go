package ddbproxy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// Operations are the DynamoDB operations whose authorization the proxy
// derives; any other is refused (AccessDeniedException naming it), for
// every caller.
var Operations = []string{
	"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
	"DescribeTable", "CreateTable", "DeleteTable", "ListTables", "DescribeTimeToLive", "UpdateTimeToLive",
}

// ContextKeys are the DynamoDB condition keys the proxy supplies.
var ContextKeys = []string{"dynamodb:LeadingKeys", "dynamodb:Attributes", "dynamodb:Select", "dynamodb:ReturnValues", "dynamodb:ReturnConsumedCapacity"}

// KeySchema is what the proxy needs of a table: its partition key's name,
// its key attributes', and each index's.
type KeySchema struct {
	PartitionKey string
	Keys         []string            // the table's key attribute names
	Indexes      map[string][]string // index name → its key attribute names
}

// authz is one authorization a request needs: an action on a resource with
// the request's condition keys.
type authz struct {
	action, resource string
	ctx              iam.Context
}

// request is the part of every data-plane request the proxy reads.
type request struct {
	TableName                 string                     `json:"TableName"`
	IndexName                 string                     `json:"IndexName"`
	Key                       map[string]json.RawMessage `json:"Key"`
	Item                      map[string]json.RawMessage `json:"Item"`
	UpdateExpression          string                     `json:"UpdateExpression"`
	ConditionExpression       string                     `json:"ConditionExpression"`
	KeyConditionExpression    string                     `json:"KeyConditionExpression"`
	FilterExpression          string                     `json:"FilterExpression"`
	ProjectionExpression      string                     `json:"ProjectionExpression"`
	ExpressionAttributeNames  map[string]string          `json:"ExpressionAttributeNames"`
	ExpressionAttributeValues map[string]json.RawMessage `json:"ExpressionAttributeValues"`
	AttributesToGet           []string                   `json:"AttributesToGet"`
	AttributeUpdates          map[string]json.RawMessage `json:"AttributeUpdates"`
	Expected                  map[string]json.RawMessage `json:"Expected"`
	KeyConditions             map[string]struct {
		AttributeValueList []json.RawMessage `json:"AttributeValueList"`
		ComparisonOperator string            `json:"ComparisonOperator"`
	} `json:"KeyConditions"`
	QueryFilter            map[string]json.RawMessage `json:"QueryFilter"`
	ScanFilter             map[string]json.RawMessage `json:"ScanFilter"`
	Select                 string                     `json:"Select"`
	ReturnValues           string                     `json:"ReturnValues"`
	ReturnConsumedCapacity string                     `json:"ReturnConsumedCapacity"`
}

// tableName reduces a TableName that may be an ARN to the name.
func tableName(s string) string {
	if i := strings.Index(s, ":table/"); i >= 0 && strings.HasPrefix(s, "arn:") {
		return s[i+len(":table/"):]
	}
	return s
}

// derive turns one request into the authorizations AWS would check, with
// the condition keys AWS would fill from it. schema looks a table's keys up
// (nil: unknown). An error is a request shape the proxy does not evaluate.
func derive(op string, body []byte, tableARN func(string) string, schema func(string) *KeySchema) ([]authz, error) {
	if !slices.Contains(Operations, op) {
		return nil, fmt.Errorf("the DynamoDB operation %s is not evaluated by the local stack (it derives %s)", op, strings.Join(Operations, ", "))
	}
	var in request
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("the %s request is not JSON: %v", op, err)
	}
	if op == "ListTables" {
		return []authz{{action: "dynamodb:ListTables", resource: "*", ctx: iam.Context{}}}, nil
	}
	if op == "BatchGetItem" {
		return deriveBatchGet(body, tableARN, schema)
	}
	if in.TableName == "" {
		return nil, fmt.Errorf("the %s request names no table", op)
	}
	table := tableName(in.TableName)
	res := tableARN(table)
	ctx := iam.Context{}
	a := authz{action: "dynamodb:" + op, resource: res, ctx: ctx}
	switch op {
	case "DescribeTable", "CreateTable", "DeleteTable", "DescribeTimeToLive", "UpdateTimeToLive":
		return []authz{a}, nil
	}
	ks := schema(table)
	if in.ReturnConsumedCapacity != "" {
		ctx.Set("dynamodb:ReturnConsumedCapacity", in.ReturnConsumedCapacity)
	}
	names := newNames(in.ExpressionAttributeNames)
	leading := func(item map[string]json.RawMessage) {
		if ks == nil {
			ctx.SetUnknown("dynamodb:LeadingKeys", "the table's key schema could not be read")
			return
		}
		v, ok := item[ks.PartitionKey]
		if !ok {
			ctx.SetUnknown("dynamodb:LeadingKeys", "the request has no value for the partition key "+ks.PartitionKey)
			return
		}
		s, ok := scalarKey(v)
		if !ok {
			ctx.SetUnknown("dynamodb:LeadingKeys", "the partition key's value is not a string or number")
			return
		}
		ctx.Set("dynamodb:LeadingKeys", s)
	}
	keyNames := func() []string {
		if ks == nil {
			return nil
		}
		return ks.Keys
	}
	attrs := func(list []string, err error) {
		if err != nil {
			ctx.SetUnknown("dynamodb:Attributes", err.Error())
			return
		}
		slices.Sort(list)
		ctx.Set("dynamodb:Attributes", slices.Compact(list)...)
	}
	if in.ReturnValues != "" {
		ctx.Set("dynamodb:ReturnValues", in.ReturnValues)
	}
	switch op {
	case "GetItem":
		leading(in.Key)
		read(ctx, in, names, keyNames(), false, attrs)
	case "PutItem":
		leading(in.Item)
		list := mapKeys(in.Item)
		list = append(list, mapKeys(in.Expected)...)
		cn, err := names.in(in.ConditionExpression)
		attrs(append(list, cn...), err)
	case "UpdateItem":
		leading(in.Key)
		list := append(mapKeys(in.Key), mapKeys(in.AttributeUpdates)...)
		list = append(list, mapKeys(in.Expected)...)
		un, err := names.in(in.UpdateExpression)
		if err == nil {
			var cn []string
			cn, err = names.in(in.ConditionExpression)
			un = append(un, cn...)
		}
		attrs(append(list, un...), err)
	case "DeleteItem":
		leading(in.Key)
		list := append(mapKeys(in.Key), mapKeys(in.Expected)...)
		cn, err := names.in(in.ConditionExpression)
		attrs(append(list, cn...), err)
	case "Query", "Scan":
		if in.IndexName != "" {
			a.resource = res + "/index/" + in.IndexName
		}
		if op == "Query" {
			switch {
			case in.IndexName != "":
				ctx.SetUnknown("dynamodb:LeadingKeys", "a Query of an index (LeadingKeys names the table's partition key)")
			case ks == nil:
				ctx.SetUnknown("dynamodb:LeadingKeys", "the table's key schema could not be read")
			default:
				v, err := queryPartition(in, names, ks.PartitionKey)
				if err != nil {
					ctx.SetUnknown("dynamodb:LeadingKeys", err.Error())
				} else {
					ctx.Set("dynamodb:LeadingKeys", v)
				}
			}
		}
		// A Scan names no partition key: LeadingKeys is absent, as on AWS
		// (so ForAllValues conditions on it hold).
		read(ctx, in, names, keyNames(), in.IndexName != "", attrs)
		a.action = "dynamodb:" + op
	}
	return []authz{a}, nil
}

// read fills dynamodb:Select and dynamodb:Attributes for a read: the
// projected attributes and the key's, or — without a projection — every
// attribute, which no list names (Unknown).
func read(ctx iam.Context, in request, names *exprNames, keys []string, index bool, attrs func([]string, error)) {
	projected := len(in.AttributesToGet) > 0 || in.ProjectionExpression != ""
	sel := in.Select
	switch {
	case sel != "":
	case projected:
		sel = "SPECIFIC_ATTRIBUTES"
	case index:
		sel = "ALL_PROJECTED_ATTRIBUTES"
	default:
		sel = "ALL_ATTRIBUTES"
	}
	ctx.Set("dynamodb:Select", sel)
	if !projected {
		if sel == "COUNT" {
			attrs(append([]string{}, keys...), nil)
			return
		}
		ctx.SetUnknown("dynamodb:Attributes", "a read without ProjectionExpression reads every attribute")
		return
	}
	list := append(append([]string{}, keys...), in.AttributesToGet...)
	pn, err := names.in(in.ProjectionExpression)
	attrs(append(list, pn...), err)
}

// queryPartition is the partition key value a Query names: in
// KeyConditionExpression (pk = :v) or KeyConditions (EQ).
func queryPartition(in request, names *exprNames, pk string) (string, error) {
	if kc, ok := in.KeyConditions[pk]; ok && kc.ComparisonOperator == "EQ" && len(kc.AttributeValueList) == 1 {
		if s, ok := scalarKey(kc.AttributeValueList[0]); ok {
			return s, nil
		}
	}
	if in.KeyConditionExpression != "" {
		placeholder, err := names.equality(in.KeyConditionExpression, pk)
		if err != nil {
			return "", err
		}
		if s, ok := scalarKey(in.ExpressionAttributeValues[placeholder]); ok {
			return s, nil
		}
	}
	return "", fmt.Errorf("the Query's partition key value could not be read")
}

// scalarKey is a key attribute's value as LeadingKeys carries it: the text
// of an S or N value.
func scalarKey(v json.RawMessage) (string, bool) {
	var av map[string]any
	if json.Unmarshal(v, &av) != nil || len(av) != 1 {
		return "", false
	}
	for t, x := range av {
		s, ok := x.(string)
		return s, ok && (t == "S" || t == "N")
	}
	return "", false
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// batchGet is a BatchGetItem request: per table, the keys and projection
// of a GetItem.
type batchGet struct {
	RequestItems map[string]struct {
		Keys                     []map[string]json.RawMessage `json:"Keys"`
		ProjectionExpression     string                       `json:"ProjectionExpression"`
		AttributesToGet          []string                     `json:"AttributesToGet"`
		ExpressionAttributeNames map[string]string            `json:"ExpressionAttributeNames"`
	} `json:"RequestItems"`
	ReturnConsumedCapacity string `json:"ReturnConsumedCapacity"`
}

// deriveBatchGet is BatchGetItem's authorization: dynamodb:BatchGetItem on
// each table it reads, with LeadingKeys every partition key value it names
// there and Attributes what its projection (and the keys) name, as a
// GetItem of those items would be.
func deriveBatchGet(body []byte, tableARN func(string) string, schema func(string) *KeySchema) ([]authz, error) {
	var in batchGet
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("the BatchGetItem request is not JSON: %v", err)
	}
	if len(in.RequestItems) == 0 {
		return nil, fmt.Errorf("the BatchGetItem request names no table")
	}
	var out []authz
	names := mapKeys(in.RequestItems)
	slices.Sort(names)
	for _, name := range names {
		items := in.RequestItems[name]
		table := tableName(name)
		ctx := iam.Context{}
		if in.ReturnConsumedCapacity != "" {
			ctx.Set("dynamodb:ReturnConsumedCapacity", in.ReturnConsumedCapacity)
		}
		ks := schema(table)
		var leading []string
		for _, key := range items.Keys {
			if ks == nil {
				ctx.SetUnknown("dynamodb:LeadingKeys", "the table's key schema could not be read")
				break
			}
			v, ok := scalarKey(key[ks.PartitionKey])
			if !ok {
				ctx.SetUnknown("dynamodb:LeadingKeys", "a key has no string or number value for the partition key "+ks.PartitionKey)
				break
			}
			leading = append(leading, v)
		}
		if ks != nil && len(leading) == len(items.Keys) {
			slices.Sort(leading)
			ctx.Set("dynamodb:LeadingKeys", slices.Compact(leading)...)
		}
		var keys []string
		if ks != nil {
			keys = ks.Keys
		}
		read(ctx, request{ProjectionExpression: items.ProjectionExpression, AttributesToGet: items.AttributesToGet}, newNames(items.ExpressionAttributeNames), keys, false, func(list []string, err error) {
			if err != nil {
				ctx.SetUnknown("dynamodb:Attributes", err.Error())
				return
			}
			slices.Sort(list)
			ctx.Set("dynamodb:Attributes", slices.Compact(list)...)
		})
		out = append(out, authz{action: "dynamodb:BatchGetItem", resource: tableARN(table), ctx: ctx})
	}
	return out, nil
}
