package audit

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyendpoints "github.com/aws/smithy-go/endpoints"

	"github.com/mcpfn/mcpfn/ddbcrc"
)

// NewDynamoClient returns the DynamoDB client [NewFromEnv] and the CLI use:
// dynamodb.NewFromConfig with response CRC32 checks only where the response
// carries a checksum (see internal/ddbcrc: DynamoDB Local sends none on
// error responses, and every lost conditional write made the SDK warn), and
// endpoints resolved once per set of parameters (see [cachedEndpoints]).
func NewDynamoClient(cfg aws.Config, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){ddbcrc.Option, cacheEndpoints}, optFns...)...)
}

// cacheEndpoints wraps the client's endpoint resolver in a cache.
func cacheEndpoints(o *dynamodb.Options) {
	next := o.EndpointResolverV2
	if next == nil {
		next = dynamodb.NewDefaultEndpointResolverV2()
	}
	o.EndpointResolverV2 = &cachedEndpoints{next: next}
}

// cachedEndpoints remembers what next resolved for each set of endpoint
// parameters. The SDK runs its endpoint rules for every request, and an
// audit client's parameters never change (one region, one endpoint, one
// table): the rules were 5 % of a warm function's CPU with the audit on,
// a third of its PutItem's (docs/benchmarks.md, "The row leaves the
// caller's path"). Errors are not remembered. The SDK copies what it uses
// of an endpoint and changes nothing shared (its Headers and Properties are
// only read).
type cachedEndpoints struct {
	next dynamodb.EndpointResolverV2
	mu   sync.Mutex
	seen map[string]smithyendpoints.Endpoint
}

// cachedEndpointsMax bounds the cache: past it, nothing more is remembered.
const cachedEndpointsMax = 64

func (c *cachedEndpoints) ResolveEndpoint(ctx context.Context, p dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	key := endpointKey(p)
	c.mu.Lock()
	e, ok := c.seen[key]
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	e, err := c.next.ResolveEndpoint(ctx, p)
	if err != nil {
		return e, err
	}
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[string]smithyendpoints.Endpoint{}
	}
	if len(c.seen) < cachedEndpointsMax {
		c.seen[key] = e
	}
	c.mu.Unlock()
	return e, nil
}

// endpointKey is every parameter of p, told apart (a nil pointer from an
// empty value).
func endpointKey(p dynamodb.EndpointParameters) string {
	var b strings.Builder
	str := func(s *string) {
		if s == nil {
			b.WriteString("-|")
			return
		}
		b.WriteString(strconv.Quote(*s))
		b.WriteByte('|')
	}
	flag := func(v *bool) {
		switch {
		case v == nil:
			b.WriteString("-|")
		case *v:
			b.WriteString("t|")
		default:
			b.WriteString("f|")
		}
	}
	str(p.Region)
	flag(p.UseDualStack)
	flag(p.UseFIPS)
	str(p.Endpoint)
	str(p.AccountId)
	str(p.AccountIdEndpointMode)
	str(p.ResourceArn)
	flag(p.IsSearchOperation)
	b.WriteString(strconv.Itoa(len(p.ResourceArnList)))
	for _, s := range p.ResourceArnList {
		b.WriteByte('|')
		b.WriteString(strconv.Quote(s))
	}
	return b.String()
}
