package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestABucketPolicyCannotWidenWhatMcpfnGenerates: a bucket policy of the
// project's on mcpfn's payloads bucket, or naming a generated role, fails
// `mcpfn template -check`; one on the project's own bucket for its own
// principals does not.
func TestABucketPolicyCannotWidenWhatMcpfnGenerates(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rolesNotWidened(src); err != nil {
		t.Fatalf("this repository's template: %v", err)
	}
	policy := func(bucket, principal string) []byte {
		res := "\n  ProjectBucketPolicy:\n    Type: AWS::S3::BucketPolicy\n    Properties:\n      Bucket: " + bucket + "\n" +
			"      PolicyDocument:\n        Version: \"2012-10-17\"\n        Statement:\n          - Effect: Allow\n" +
			"            Principal:\n              AWS: " + principal + "\n            Action: s3:*\n            Resource: \"*\"\n"
		i := strings.Index(string(src), "\nOutputs:")
		if i < 0 {
			t.Fatal("no Outputs in template.yaml")
		}
		return []byte(string(src[:i]) + res + string(src[i:]))
	}
	for name, tc := range map[string]struct {
		tmpl []byte
		want string
	}{
		"on the payloads bucket":      {policy("!Ref PayloadsBucket", `"arn:aws:iam::123456789012:role/Other"`), "attaches to PayloadsBucket"},
		"granting a tool's role":      {policy(`"my-own-bucket"`, "!GetAtt BroadcastGetFunctionRole.Arn"), "attaches to BroadcastGetFunctionRole"},
		"the project's own principal": {policy(`"my-own-bucket"`, `"arn:aws:iam::123456789012:role/Other"`), ""},
	} {
		err := rolesNotWidened(tc.tmpl)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}
