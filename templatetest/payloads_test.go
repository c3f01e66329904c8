package templatetest

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// TestPayloadsBucketIsPrivateEncryptedVersionedAndExpires: the skeleton's
// payloads bucket encrypts every object (SSE-S3), blocks every form of
// public access, disables ACLs (the bucket owner owns every object),
// keeps versions (a reference names one), expires current and noncurrent
// versions after PayloadRetentionDays (1 to 365, default 1) and is named
// in an output.
func TestPayloadsBucketIsPrivateEncryptedVersionedAndExpires(t *testing.T) {
	rt := raw(t)
	b := mustResource(t, samgen.PayloadsBucket)
	if b.Type != samtemplate.TypeS3Bucket {
		t.Fatalf("%s is a %s", samgen.PayloadsBucket, b.Type)
	}
	p := b.Properties
	sse := list(dig(p, "BucketEncryption", "ServerSideEncryptionConfiguration"))
	if len(sse) != 1 || dig(sse[0], "ServerSideEncryptionByDefault", "SSEAlgorithm") != "AES256" {
		t.Errorf("encryption %v, want SSE AES256", sse)
	}
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if dig(p, "PublicAccessBlockConfiguration", k) != true {
			t.Errorf("PublicAccessBlockConfiguration.%s is not true", k)
		}
	}
	if !rt.BucketOwnerEnforced(samgen.PayloadsBucket) {
		t.Error("ACLs are not disabled (OwnershipControls BucketOwnerEnforced)")
	}
	if dig(p, "VersioningConfiguration", "Status") != "Enabled" {
		t.Errorf("versioning %v, want Enabled", dig(p, "VersioningConfiguration"))
	}
	var expires, noncurrent, markers bool
	for _, r := range list(dig(p, "LifecycleConfiguration", "Rules")) {
		if dig(r, "Status") != "Enabled" || dig(r, "Prefix") != nil || dig(r, "Filter") != nil {
			t.Errorf("lifecycle rule %v: want enabled for the whole bucket", r)
		}
		if ref(dig(r, "ExpirationInDays")) == "PayloadRetentionDays" {
			expires = true
		}
		if ref(dig(r, "NoncurrentVersionExpiration", "NoncurrentDays")) == "PayloadRetentionDays" {
			noncurrent = true
		}
		if dig(r, "ExpiredObjectDeleteMarker") == true {
			markers = true
		}
	}
	if !expires || !noncurrent || !markers {
		t.Errorf("lifecycle: current versions expire %v, noncurrent %v, delete markers removed %v; want all after PayloadRetentionDays",
			expires, noncurrent, markers)
	}
	param := rt.Parameters["PayloadRetentionDays"]
	if got, _ := json.Marshal(param); dig(param, "Type") != "Number" || dig(param, "Default") != 1 || dig(param, "MinValue") != 1 || dig(param, "MaxValue") != 365 {
		t.Errorf("PayloadRetentionDays %s, want a Number 1..365 defaulting to 1", got)
	}
	if out := rt.Outputs["PayloadsBucketName"]; ref(dig(out, "Value")) != samgen.PayloadsBucket {
		t.Errorf("output PayloadsBucketName %v", out)
	}
}

// TestPayloadsBucketRefusesPlaintext: its only bucket policy denies every
// principal every S3 action on the bucket and its objects when the request
// did not come over TLS, and grants nothing (the roles' own policies do).
func TestPayloadsBucketRefusesPlaintext(t *testing.T) {
	rt := raw(t)
	var policies []string
	for id, r := range rt.Resources(samtemplate.TypeS3BucketPolicy) {
		if ref(r.Properties["Bucket"]) == samgen.PayloadsBucket {
			policies = append(policies, id)
		}
	}
	if len(policies) != 1 {
		t.Fatalf("bucket policies of %s: %v, want one", samgen.PayloadsBucket, policies)
	}
	doc := mustResource(t, policies[0]).Properties["PolicyDocument"]
	sts := list(dig(doc, "Statement"))
	if len(sts) != 1 {
		t.Fatalf("statements %v, want the TLS-only deny alone", sts)
	}
	st := sts[0]
	if dig(st, "Effect") != "Deny" || dig(st, "Principal") != "*" || dig(st, "Action") != "s3:*" {
		t.Errorf("statement %v: want Deny * s3:*", st)
	}
	var on []string
	for _, r := range list(dig(st, "Resource")) {
		if ga := getAtt(r); ga != "" {
			on = append(on, ga)
		} else if fn, arg := intrinsic(r); fn == "Fn::Sub" {
			on = append(on, arg.(string))
		}
	}
	slices.Sort(on)
	if want := []string{"${PayloadsBucket.Arn}/*", "PayloadsBucket.Arn"}; !slices.Equal(on, want) {
		t.Errorf("resources %v, want the bucket and its objects %v", on, want)
	}
	cond, _ := json.Marshal(dig(st, "Condition"))
	if string(cond) != `{"Bool":{"aws:SecureTransport":"false"}}` {
		t.Errorf("condition %s, want Bool aws:SecureTransport false", cond)
	}
}

// TestEveryRoleReachesOnlyItsOwnPayloads: across every function of the
// template, an S3 grant on the payloads bucket names one tool's prefix —
// the function's own for a tool function, each tool's by name for the
// gateway — and no grant's key pattern holds a wildcard but its last
// character, so none reaches across tools.
func TestEveryRoleReachesOnlyItsOwnPayloads(t *testing.T) {
	rt := raw(t)
	toolOf := map[string]string{}
	for _, e := range repoCatalog(t).Tools {
		toolOf[e.Function] = e.Tool.Name
	}
	for id, fn := range rt.Resources(serverlessFunction) {
		for g := range grants(t, id, fn.Properties) {
			action, on, _ := strings.Cut(g, " on ")
			keys, ok := strings.CutPrefix(on, samgen.PayloadsBucket+"/")
			if !ok {
				if strings.HasPrefix(action, "s3:") && on == samgen.PayloadsBucket {
					t.Errorf("%s may %s: a bucket-level grant", id, g)
				}
				continue
			}
			tool, rest, _ := strings.Cut(keys, "/")
			if strings.Count(keys, "*") != 1 || (rest != "results/*" && rest != "args/*") {
				t.Errorf("%s may %s: not one tool's results/ or args/", id, g)
			}
			switch {
			case toolOf[id] != "":
				if tool != toolOf[id] {
					t.Errorf("%s (tool %s) may %s", id, toolOf[id], g)
				}
			case id == "GatewayFunction":
				if !slices.Contains(slices.Collect(maps.Values(toolOf)), tool) {
					t.Errorf("the gateway may %s: %q is no tool of the catalog", g, tool)
				}
			default:
				t.Errorf("%s may %s", id, g)
			}
		}
	}
}
