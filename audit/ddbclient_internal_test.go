package audit

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

// countingResolver counts resolutions on the way to the SDK's resolver.
type countingResolver struct{ n int }

func (c *countingResolver) ResolveEndpoint(ctx context.Context, p dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	c.n++
	return dynamodb.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, p)
}

// TestCachedEndpointsResolveEachParameterSetOnce: the same parameters are
// resolved once; any parameter that differs (a nil from an empty value
// included) is resolved on its own and gets its own endpoint; an error is
// not remembered.
func TestCachedEndpointsResolveEachParameterSetOnce(t *testing.T) {
	next := &countingResolver{}
	c := &cachedEndpoints{next: next}
	ctx := context.Background()
	east := dynamodb.EndpointParameters{Region: aws.String("us-east-1"), UseFIPS: aws.Bool(false), UseDualStack: aws.Bool(false), ResourceArn: aws.String("audit")}
	for range 3 {
		e, err := c.ResolveEndpoint(ctx, east)
		if err != nil || e.URI.Host != "dynamodb.us-east-1.amazonaws.com" {
			t.Fatalf("east: %v %v", e.URI.String(), err)
		}
	}
	if next.n != 1 {
		t.Errorf("%d resolutions of one parameter set, want 1", next.n)
	}
	west := east
	west.Region = aws.String("eu-west-1")
	if e, _ := c.ResolveEndpoint(ctx, west); e.URI.Host != "dynamodb.eu-west-1.amazonaws.com" {
		t.Errorf("west resolved to %s", e.URI.String())
	}
	local := east
	local.Endpoint = aws.String("http://127.0.0.1:8000")
	if e, _ := c.ResolveEndpoint(ctx, local); e.URI.Host != "127.0.0.1:8000" {
		t.Errorf("a custom endpoint resolved to %s", e.URI.String())
	}
	fips := east
	fips.UseFIPS = aws.Bool(true)
	if e, _ := c.ResolveEndpoint(ctx, fips); e.URI.Host != "dynamodb-fips.us-east-1.amazonaws.com" {
		t.Errorf("FIPS resolved to %s", e.URI.String())
	}
	if endpointKey(dynamodb.EndpointParameters{AccountId: aws.String("")}) == endpointKey(dynamodb.EndpointParameters{}) {
		t.Error("an empty value and a nil share a key")
	}
	bad := local
	bad.UseFIPS = aws.Bool(true) // FIPS and a custom endpoint: the rules refuse it
	n := next.n
	for range 2 {
		if _, err := c.ResolveEndpoint(ctx, bad); err == nil {
			t.Fatal("FIPS with a custom endpoint resolved")
		}
	}
	if next.n != n+2 {
		t.Errorf("an error was remembered: %d resolutions for two requests", next.n-n)
	}
}

// TestEndpointKeyNamesEveryParameter: a parameter the SDK adds and the key
// leaves out would make two different requests share an endpoint; this
// fails when the SDK's EndpointParameters change, to have endpointKey
// looked at.
func TestEndpointKeyNamesEveryParameter(t *testing.T) {
	var got []string
	ty := reflect.TypeFor[dynamodb.EndpointParameters]()
	for i := range ty.NumField() {
		got = append(got, ty.Field(i).Name)
	}
	want := []string{"Region", "UseDualStack", "UseFIPS", "Endpoint", "AccountId", "AccountIdEndpointMode", "ResourceArn", "ResourceArnList", "IsSearchOperation"}
	if !slices.Equal(got, want) {
		t.Errorf("dynamodb.EndpointParameters has %v; endpointKey knows %v", got, want)
	}
}
