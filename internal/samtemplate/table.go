package samtemplate

import (
	"fmt"
	"math"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Resource types TableInput converts.
const (
	TypeDynamoDBTable = "AWS::DynamoDB::Table"
	TypeSimpleTable   = "AWS::Serverless::SimpleTable"
)

// TableInput converts the table resource logicalID into a CreateTableInput
// named tableName (the template's TableName, usually generated or
// stack-scoped, is ignored: local tables need names unique per test).
//
// It carries what shapes the data — keys, attribute definitions, billing
// mode and throughput, global and local secondary indexes, streams — and
// drops what DynamoDB Local ignores or does not implement: point-in-time
// recovery, encryption, time to live (see TTLAttribute), tags, table class,
// contributor insights, deletion protection, Kinesis streams, resource
// policies, warm throughput.
func (t *Template) TableInput(logicalID, tableName string) (*dynamodb.CreateTableInput, error) {
	r, ok := t.resources[logicalID]
	if !ok {
		return nil, fmt.Errorf("samtemplate: no resource %s", logicalID)
	}
	c := converter{t: t, where: logicalID}
	var in *dynamodb.CreateTableInput
	switch r.Type {
	case TypeDynamoDBTable:
		in = c.table(r.Properties)
	case TypeSimpleTable:
		in = c.simpleTable(r.Properties)
	default:
		return nil, fmt.Errorf("samtemplate: %s is a %s, not a %s or %s", logicalID, r.Type, TypeDynamoDBTable, TypeSimpleTable)
	}
	if c.err != nil {
		return nil, c.err
	}
	in.TableName = aws.String(tableName)
	return in, nil
}

// TTLAttribute returns the attribute the table's TimeToLiveSpecification
// expires items by, or "" when the resource has none or disables it.
// DynamoDB Local accepts TTL settings but never deletes items, so callers
// use this to compute or check expiresAt values rather than to wait for
// expiry.
func (t *Template) TTLAttribute(logicalID string) string {
	r, ok := t.resources[logicalID]
	if !ok {
		return ""
	}
	spec, _ := r.Properties["TimeToLiveSpecification"].(map[string]any)
	if spec == nil {
		return ""
	}
	c := converter{t: t, where: logicalID}
	if enabled, ok := c.resolve(spec["Enabled"]).(bool); !ok || !enabled {
		return ""
	}
	name, _ := c.resolve(spec["AttributeName"]).(string)
	return name
}

// converter walks one resource's properties and keeps the first error, so
// the conversion reads as a straight list of fields.
type converter struct {
	t     *Template
	where string
	err   error
}

func (c *converter) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("samtemplate: %s: "+format, append([]any{c.where}, args...)...)
	}
}

// resolve replaces a Ref to a parameter by the parameter's Default; any
// other intrinsic is left as is, for the typed getters to reject.
func (c *converter) resolve(v any) any {
	fn, arg, ok := Intrinsic(v)
	if !ok || fn != "Ref" {
		return v
	}
	name, _ := arg.(string)
	if d, ok := c.t.ParameterDefault(name); ok {
		return d
	}
	return v
}

func (c *converter) str(v any, field string) string {
	switch s := c.resolve(v).(type) {
	case string:
		return s
	case nil:
		c.fail("%s is missing", field)
	default:
		c.fail("%s: want a string, got %v (only Ref to a parameter with a Default is resolved)", field, s)
	}
	return ""
}

func (c *converter) integer(v any, field string) int64 {
	switch n := c.resolve(v).(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n)
		}
	case float64:
		if n == math.Trunc(n) {
			return int64(n)
		}
	case string: // parameter Defaults of Type Number are often quoted
		if i, err := strconv.ParseInt(n, 10, 64); err == nil {
			return i
		}
	}
	c.fail("%s: want an integer, got %v", field, v)
	return 0
}

func (c *converter) list(v any, field string) []map[string]any {
	if v == nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		c.fail("%s: want a list, got %v", field, v)
		return nil
	}
	out := make([]map[string]any, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			c.fail("%s[%d]: want a mapping, got %v", field, i, it)
			return nil
		}
		out = append(out, m)
	}
	return out
}

func (c *converter) table(p map[string]any) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		KeySchema:   c.keySchema(p["KeySchema"], "KeySchema"),
		BillingMode: types.BillingModeProvisioned, // CloudFormation's default
	}
	for i, a := range c.list(p["AttributeDefinitions"], "AttributeDefinitions") {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(c.str(a["AttributeName"], fmt.Sprintf("AttributeDefinitions[%d].AttributeName", i))),
			AttributeType: types.ScalarAttributeType(c.str(a["AttributeType"], fmt.Sprintf("AttributeDefinitions[%d].AttributeType", i))),
		})
	}
	if v, ok := p["BillingMode"]; ok {
		in.BillingMode = types.BillingMode(c.str(v, "BillingMode"))
	}
	provisioned := in.BillingMode == types.BillingModeProvisioned
	in.ProvisionedThroughput = c.throughput(p["ProvisionedThroughput"], "ProvisionedThroughput", provisioned)

	for i, g := range c.list(p["GlobalSecondaryIndexes"], "GlobalSecondaryIndexes") {
		field := fmt.Sprintf("GlobalSecondaryIndexes[%d]", i)
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:             aws.String(c.str(g["IndexName"], field+".IndexName")),
			KeySchema:             c.keySchema(g["KeySchema"], field+".KeySchema"),
			Projection:            c.projection(g["Projection"], field+".Projection"),
			ProvisionedThroughput: c.throughput(g["ProvisionedThroughput"], field+".ProvisionedThroughput", provisioned),
		})
	}
	for i, l := range c.list(p["LocalSecondaryIndexes"], "LocalSecondaryIndexes") {
		field := fmt.Sprintf("LocalSecondaryIndexes[%d]", i)
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName:  aws.String(c.str(l["IndexName"], field+".IndexName")),
			KeySchema:  c.keySchema(l["KeySchema"], field+".KeySchema"),
			Projection: c.projection(l["Projection"], field+".Projection"),
		})
	}
	if s, ok := p["StreamSpecification"].(map[string]any); ok {
		in.StreamSpecification = &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewType(c.str(s["StreamViewType"], "StreamSpecification.StreamViewType")),
		}
	}
	return in
}

// simpleTable expands AWS::Serverless::SimpleTable the way SAM does: a
// single hash key (default "id", String) and on-demand billing unless
// ProvisionedThroughput is given.
func (c *converter) simpleTable(p map[string]any) *dynamodb.CreateTableInput {
	name, typ := "id", "String"
	if pk, ok := p["PrimaryKey"].(map[string]any); ok {
		name = c.str(pk["Name"], "PrimaryKey.Name")
		typ = c.str(pk["Type"], "PrimaryKey.Type")
	}
	attrType := map[string]types.ScalarAttributeType{
		"String": types.ScalarAttributeTypeS, "Number": types.ScalarAttributeTypeN, "Binary": types.ScalarAttributeTypeB,
	}[typ]
	if attrType == "" {
		c.fail("PrimaryKey.Type %q: want String, Number or Binary", typ)
	}
	in := &dynamodb.CreateTableInput{
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(name), AttributeType: attrType}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(name), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if pt, ok := p["ProvisionedThroughput"]; ok {
		in.BillingMode = types.BillingModeProvisioned
		in.ProvisionedThroughput = c.throughput(pt, "ProvisionedThroughput", true)
	}
	return in
}

func (c *converter) keySchema(v any, field string) []types.KeySchemaElement {
	var ks []types.KeySchemaElement
	for i, k := range c.list(v, field) {
		ks = append(ks, types.KeySchemaElement{
			AttributeName: aws.String(c.str(k["AttributeName"], fmt.Sprintf("%s[%d].AttributeName", field, i))),
			KeyType:       types.KeyType(c.str(k["KeyType"], fmt.Sprintf("%s[%d].KeyType", field, i))),
		})
	}
	if len(ks) == 0 {
		c.fail("%s is missing or empty", field)
	}
	return ks
}

func (c *converter) projection(v any, field string) *types.Projection {
	m, ok := v.(map[string]any)
	if !ok {
		c.fail("%s is missing", field)
		return nil
	}
	p := &types.Projection{ProjectionType: types.ProjectionTypeAll} // CloudFormation's default
	if t, ok := m["ProjectionType"]; ok {
		p.ProjectionType = types.ProjectionType(c.str(t, field+".ProjectionType"))
	}
	if attrs, ok := m["NonKeyAttributes"].([]any); ok {
		for i, a := range attrs {
			p.NonKeyAttributes = append(p.NonKeyAttributes, c.str(a, fmt.Sprintf("%s.NonKeyAttributes[%d]", field, i)))
		}
	}
	return p
}

// throughput converts ProvisionedThroughput. The API rejects it on
// on-demand tables and requires it on provisioned ones, so it is only read
// when provisioned is true.
func (c *converter) throughput(v any, field string, provisioned bool) *types.ProvisionedThroughput {
	if !provisioned {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.fail("%s is required with BillingMode PROVISIONED", field)
		return nil
	}
	return &types.ProvisionedThroughput{
		ReadCapacityUnits:  aws.Int64(c.integer(m["ReadCapacityUnits"], field+".ReadCapacityUnits")),
		WriteCapacityUnits: aws.Int64(c.integer(m["WriteCapacityUnits"], field+".WriteCapacityUnits")),
	}
}
