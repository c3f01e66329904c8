package samtemplate

import "fmt"

// S3 resource types.
const (
	TypeS3Bucket       = "AWS::S3::Bucket"
	TypeS3BucketPolicy = "AWS::S3::BucketPolicy"
)

// BucketVersioning is the versioning status a bucket of the template
// declares ("Enabled", "Suspended"), "" for none, with intrinsic functions
// resolved against vals.
func (t *Template) BucketVersioning(logicalID string, vals Values) (string, error) {
	r, ok := t.Resource(logicalID)
	if !ok || r.Type != TypeS3Bucket {
		return "", fmt.Errorf("template: %s is not an %s", logicalID, TypeS3Bucket)
	}
	vc, ok := r.Properties["VersioningConfiguration"]
	if !ok {
		return "", nil
	}
	m, _ := vc.(map[string]any)
	status, err := t.ResolveString(m["Status"], vals)
	if err != nil {
		return "", fmt.Errorf("template: %s VersioningConfiguration.Status: %w", logicalID, err)
	}
	switch status {
	case "Enabled", "Suspended":
		return status, nil
	}
	return "", fmt.Errorf("template: %s VersioningConfiguration.Status %q is neither Enabled nor Suspended", logicalID, status)
}

// BucketOwnerEnforced reports whether a bucket of the template disables
// ACLs (OwnershipControls BucketOwnerEnforced): S3 then refuses a request
// that sets an ACL other than bucket-owner-full-control.
func (t *Template) BucketOwnerEnforced(logicalID string) bool {
	r, _ := t.Resource(logicalID)
	oc, _ := r.Properties["OwnershipControls"].(map[string]any)
	rules, _ := oc["Rules"].([]any)
	for _, rule := range rules {
		if m, _ := rule.(map[string]any); m["ObjectOwnership"] == "BucketOwnerEnforced" {
			return true
		}
	}
	return false
}
