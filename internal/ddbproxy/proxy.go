// Package ddbproxy is the local stack's DynamoDB endpoint: a proxy in front
// of DynamoDB Local (or another DynamoDB endpoint) that checks each
// request's Signature Version 4, derives what AWS would authorize — the
// action, the table or index ARN, and the condition keys
// dynamodb:LeadingKeys, dynamodb:Attributes, dynamodb:Select,
// dynamodb:ReturnValues and dynamodb:ReturnConsumedCapacity from the
// request itself — decides it with internal/iam against the signer's
// policies, and refuses it as DynamoDB does (AccessDeniedException) or
// forwards it, signed again with the stack's own key.
//
// What the proxy cannot derive it does not guess: an operation outside
// [Operations] is refused, and a condition key it cannot fill from a
// request (a read without a projection has no attribute list; a Query of an
// index names no table partition key) is Unknown to the evaluator, which
// then lets no Allow that looks at it apply.
package ddbproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/localonly"
)

// maxBody bounds a request (DynamoDB's own limit is 16 MB).
const maxBody = 16 << 20

// Proxy serves the DynamoDB API. Set the fields, then serve it.
type Proxy struct {
	// Upstream is the DynamoDB endpoint requests go to once allowed.
	Upstream string
	// Authority authenticates and decides requests.
	Authority *iam.Authority
	// Upstream signs forwarded requests and reads key schemas with
	// these credentials (DynamoDB Local accepts any).
	UpstreamCredentials aws.Credentials
	// Refuse may refuse a request before anything else is read: a
	// non-empty message is answered with 403 AccessDeniedException. nil
	// is internal/localonly's check: loopback Host names only, no
	// browser requests (a page in the developer's browser, by DNS
	// rebinding or from its own origin, must not reach the tables).
	Refuse func(r *http.Request) string
	// Denied is told each refused request (for the stack's log).
	Denied func(who, action, resource, message string)

	once    sync.Once
	client  *http.Client
	ddb     *dynamodb.Client
	mu      sync.Mutex
	schemas map[string]*KeySchema
}

func (p *Proxy) init() {
	p.once.Do(func() {
		p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute, DisableCompression: true}}
		p.schemas = map[string]*KeySchema{}
		p.ddb = dynamodb.New(dynamodb.Options{
			Region: p.Authority.Region, BaseEndpoint: aws.String(p.Upstream),
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return p.UpstreamCredentials, nil }),
			HTTPClient:  p.client,
		})
	})
}

// Forget drops the cached key schema of table (a test recreated it).
func (p *Proxy) Forget(table string) {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.schemas, table)
}

func (p *Proxy) schema(ctx context.Context, table string) *KeySchema {
	p.mu.Lock()
	ks, ok := p.schemas[table]
	p.mu.Unlock()
	if ok {
		return ks
	}
	out, err := p.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil // not cached: the table may be created later
	}
	ks = &KeySchema{Indexes: map[string][]string{}}
	keys := func(ks []types.KeySchemaElement) (names []string, hash string) {
		for _, k := range ks {
			names = append(names, aws.ToString(k.AttributeName))
			if k.KeyType == types.KeyTypeHash {
				hash = aws.ToString(k.AttributeName)
			}
		}
		return names, hash
	}
	ks.Keys, ks.PartitionKey = keys(out.Table.KeySchema)
	for _, g := range out.Table.GlobalSecondaryIndexes {
		ks.Indexes[aws.ToString(g.IndexName)], _ = keys(g.KeySchema)
	}
	for _, l := range out.Table.LocalSecondaryIndexes {
		ks.Indexes[aws.ToString(l.IndexName)], _ = keys(l.KeySchema)
	}
	p.mu.Lock()
	p.schemas[table] = ks
	p.mu.Unlock()
	return ks
}

func (p *Proxy) tableARN(table string) string {
	return "arn:aws:dynamodb:" + p.Authority.Region + ":" + p.Authority.Account + ":table/" + table
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.init()
	refuse := p.Refuse
	if refuse == nil {
		refuse = func(r *http.Request) string { return localonly.Refuse(r) }
	}
	if msg := refuse(r); msg != "" {
		writeError(w, http.StatusForbidden, "AccessDeniedException", msg)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "ValidationException", "the request is larger than the local stack accepts")
		return
	}
	id, aerr := p.Authority.Authenticate(r, body, "dynamodb")
	if aerr != nil {
		writeError(w, http.StatusBadRequest, aerr.Code, aerr.Message)
		return
	}
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	if !ok {
		writeError(w, http.StatusBadRequest, "UnknownOperationException", "")
		return
	}
	checks, err := derive(op, body, p.tableARN, func(t string) *KeySchema { return p.schema(r.Context(), t) })
	if err != nil {
		// A request shape the stack cannot decide is refused, never
		// forwarded on trust.
		msg := fmt.Sprintf("User: %s is not authorized to perform: dynamodb:%s (mcpfn local: %v)", id.Principal.ARN, op, err)
		p.deny(id, "dynamodb:"+op, "", msg)
		writeError(w, http.StatusBadRequest, "AccessDeniedException", msg)
		return
	}
	for _, c := range checks {
		req, d := p.Authority.Decide(id, c.action, c.resource, c.ctx)
		if d.Result != iam.Allowed {
			msg := d.Message(req)
			p.deny(id, c.action, c.resource, msg)
			writeError(w, http.StatusBadRequest, "AccessDeniedException", msg)
			return
		}
	}
	p.forward(w, r, body)
}

func (p *Proxy) deny(id *iam.Identity, action, resource, msg string) {
	if p.Denied != nil {
		p.Denied(id.Name, action, resource, msg)
	}
}

// forward sends the allowed request upstream, signed with the stack's key,
// and copies the answer back as it is (its CRC32 header included).
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, strings.TrimRight(p.Upstream, "/")+"/", bytes.NewReader(body))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	for _, h := range []string{"Content-Type", "X-Amz-Target", "Accept-Encoding"} {
		if v := r.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(r.Context(), p.UpstreamCredentials, out, hex.EncodeToString(sum[:]), "dynamodb", p.Authority.Region, time.Now()); err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	res, err := p.client.Do(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "the local DynamoDB did not answer: "+err.Error())
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

// writeError answers as DynamoDB does (JSON 1.0, the coral type prefix).
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	key := "message"
	if code == "AccessDeniedException" {
		key = "Message"
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazon.coral.service#" + code, key: msg})
}
