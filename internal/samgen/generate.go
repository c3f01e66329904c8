package samgen

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// skeletonRegions are the shared skeleton's regions, each a file of
// regions/.
var skeletonRegions = []string{"parameters", "rules", "conditions", "resources", "outputs"}

// newTemplate starts a project's template when it has none.
func newTemplate(description string) string {
	return "AWSTemplateFormatVersion: \"2010-09-09\"\n" +
		"Transform: AWS::Serverless-2016-10-31\n" +
		"Description: " + quote(description) + "\n\n" +
		"# mcpfn owns the regions between its markers (`mcpfn template` rewrites\n" +
		"# them from your tools' declarations); everything else here is yours.\n" +
		"# Your own resources — the tables your tools name — go outside them.\n\n"
}

// Generate returns the project's template with every mcpfn region written for
// the catalog's tools: the shared skeleton and one region per tool, added,
// rewritten or removed. Lines outside the regions are kept byte for byte. src
// empty starts a new template described by description.
func Generate(src []byte, cat *catalog.File, description string) ([]byte, error) {
	if len(cat.Tools) == 0 {
		return nil, errors.New("no tools: a project needs at least one tool function (functions/<tool>/main.go)")
	}
	text := string(src)
	if strings.TrimSpace(text) == "" {
		text = newTemplate(description)
	}
	d, err := parse(text)
	if err != nil {
		return nil, err
	}
	views := make([]toolView, len(cat.Tools))
	want := map[string]bool{}
	for i, e := range cat.Tools {
		if views[i], err = viewOf(e); err != nil {
			return nil, err
		}
		want["tool "+e.Tool.Name] = true
	}
	// Every region's body is rendered first, so that the names they
	// define are checked against the project's template as written (its
	// line numbers) before anything moves.
	order := slices.Clone(skeletonRegions)
	bodies := map[string][]string{}
	data := struct{ Tools []toolView }{views}
	for _, name := range skeletonRegions {
		if bodies[name], err = render(name+".yaml", data); err != nil {
			return nil, err
		}
	}
	for _, v := range views {
		name := "tool " + v.Name
		order = append(order, name)
		if bodies[name], err = render("tool.yaml", v); err != nil {
			return nil, err
		}
	}
	generated, err := checkNames(d, order, bodies)
	if err != nil {
		return nil, err
	}
	for _, r := range slices.Clone(d.regions) {
		if strings.HasPrefix(r.name, "tool ") && !want[r.name] {
			if d, err = d.remove(r.name); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range skeletonRegions {
		if d, err = d.ensureSection(sectionOf(name)); err != nil {
			return nil, err
		}
	}
	for _, name := range order {
		if d, err = d.ensureRegion(name); err != nil {
			return nil, err
		}
		if d, err = d.fill(name, bodies[name]); err != nil {
			return nil, err
		}
	}
	out := d.String()
	if err := check(out, generated, cat); err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// keyRE is a mapping key at the sections' indentation.
var keyRE = regexp.MustCompile(`^  ([A-Za-z0-9]+):`)

// checkNames returns what each region's body defines (section/key →
// region) and fails when two regions define one name (a tool named
// gateway would define the skeleton's GatewayFunction; note_add and noteAdd
// share their logical ids) or when the project's own lines, outside the
// regions, define a name a region does.
func checkNames(d *doc, order []string, bodies map[string][]string) (map[string]string, error) {
	generated := map[string]string{} // section/key → region
	clashed := map[[2]string]bool{}  // one error per pair of regions
	var errs []error
	for _, name := range order {
		for _, l := range bodies[name] {
			m := keyRE.FindStringSubmatch("  " + l)
			if m == nil {
				continue
			}
			key := sectionOf(name) + "/" + m[1]
			if other, ok := generated[key]; ok && other != name {
				if pair := [2]string{other, name}; !clashed[pair] {
					clashed[pair] = true
					errs = append(errs, fmt.Errorf("mcpfn's regions %q and %q would both define %s %s: rename the tool (a tool's logical ids start with its name in PascalCase)", other, name, sectionOf(name), m[1]))
				}
				continue
			}
			generated[key] = name
		}
	}
	in := map[int]bool{}
	for _, r := range d.regions {
		for i := r.begin; i <= r.end; i++ {
			in[i] = true
		}
	}
	for _, s := range d.sections {
		for i := s.start + 1; i < s.end; i++ {
			if in[i] {
				continue
			}
			if m := keyRE.FindStringSubmatch(d.lines[i]); m != nil {
				if r, ok := generated[s.name+"/"+m[1]]; ok {
					errs = append(errs, fmt.Errorf("line %d: %s %s is defined outside mcpfn's regions and by mcpfn's region %q: rename or remove yours", i+1, s.name, m[1], r))
				}
			}
		}
	}
	return generated, errors.Join(errs...)
}

// check validates the generated template: it parses, it is a SAM
// template, and every table and bucket a declaration names is the
// project's own (with the index named).
func check(out string, generated map[string]string, cat *catalog.File) error {
	var errs []error
	t, err := samtemplate.Parse([]byte(out))
	if err != nil {
		return fmt.Errorf("the generated template does not parse: %w", err)
	}
	if tr, _ := t.Transform.([]any); !slices.Contains(tr, any("AWS::Serverless-2016-10-31")) {
		if s, _ := t.Transform.(string); s != "AWS::Serverless-2016-10-31" {
			errs = append(errs, errors.New("template.yaml needs `Transform: AWS::Serverless-2016-10-31` (mcpfn's functions are AWS::Serverless::Function)"))
		}
	}
	for _, e := range cat.Tools {
		for _, ta := range e.Tool.Tables {
			if err := checkTable(t, generated, e.Tool.Name, ta.Table, ta.Index); err != nil {
				errs = append(errs, err)
			}
		}
		for _, b := range e.Tool.Buckets {
			if err := checkBucket(t, generated, e.Tool.Name, b.Bucket); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// checkBucket: a declared bucket is an AWS::S3::Bucket of the project's
// own. mcpfn's payloads bucket is not one: each tool already has its own
// prefixes there, and a declaration could only widen them.
func checkBucket(t *samtemplate.Template, generated map[string]string, tool, bucket string) error {
	r, ok := t.Resource(bucket)
	if bucket == PayloadsBucket {
		return fmt.Errorf("tool %s declares %s, mcpfn's payloads bucket: every tool may already use its own prefixes there (%s/…), and no other", tool, bucket, tool)
	}
	if !ok || generated["Resources/"+bucket] != "" {
		return fmt.Errorf("tool %s uses bucket %s, which template.yaml does not define: add an %s named %s outside mcpfn's regions", tool, bucket, samtemplate.TypeS3Bucket, bucket)
	}
	if r.Type != samtemplate.TypeS3Bucket {
		return fmt.Errorf("tool %s uses bucket %s, which is a %s, not an S3 bucket", tool, bucket, r.Type)
	}
	return nil
}

func checkTable(t *samtemplate.Template, generated map[string]string, tool, table, index string) error {
	r, ok := t.Resource(table)
	if !ok || generated["Resources/"+table] != "" {
		return fmt.Errorf("tool %s uses table %s, which template.yaml does not define: add an AWS::DynamoDB::Table named %s outside mcpfn's regions", tool, table, table)
	}
	if r.Type != samtemplate.TypeDynamoDBTable && r.Type != samtemplate.TypeSimpleTable {
		return fmt.Errorf("tool %s uses table %s, which is a %s, not a DynamoDB table", tool, table, r.Type)
	}
	if index == "" {
		return nil
	}
	for _, key := range []string{"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} {
		list, _ := r.Properties[key].([]any)
		for _, ix := range list {
			if m, _ := ix.(map[string]any); m["IndexName"] == index {
				return nil
			}
		}
	}
	return fmt.Errorf("tool %s queries index %s of %s, which the table does not define", tool, index, table)
}

// GeneratedResources returns the logical ids of the resources inside the
// template's mcpfn regions, each with its region's name.
func GeneratedResources(src []byte) (map[string]string, error) {
	d, err := parse(string(src))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range d.regions {
		if sectionOf(r.name) != "Resources" {
			continue
		}
		for _, l := range d.lines[r.begin+1 : r.end] {
			if m := keyRE.FindStringSubmatch(l); m != nil {
				out[m[1]] = r.name
			}
		}
	}
	return out, nil
}
