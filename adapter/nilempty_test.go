package adapter

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type nilDoc struct {
	Name  string              `json:"name"`
	Tags  []string            `json:"tags"`
	Kids  []nilKid            `json:"kids"`
	Attrs map[string][]string `json:"attrs"`
	Blob  []byte              `json:"blob"`
	Ptr   *nilKid             `json:"ptr,omitempty"`
	Maybe *string             `json:"maybe"`
	Grid  [][]string          `json:"grid"`
	Nulls []*string           `json:"nulls"`
}

type nilKid struct {
	Label  string         `json:"la<bel>"`
	Names  []string       `json:"names"`
	Counts map[string]int `json:"counts"`
}

// nilDocOf builds a document from parts of s, each nil-able position nil or
// not by one bit of mask.
func nilDocOf(s string, mask uint16) *nilDoc {
	parts := strings.Split(s, ",")
	part := func(i int) string { return parts[i%len(parts)] }
	bit := func(i int) bool { return mask&(1<<i) != 0 }
	d := &nilDoc{Name: part(0)}
	if bit(0) {
		d.Tags = parts
	}
	kid := func(k int) nilKid {
		c := nilKid{Label: part(k)}
		if bit(k + 1) {
			c.Names = []string{part(k + 1)}
		}
		if bit(k + 2) {
			c.Counts = map[string]int{part(k + 2): k}
		}
		return c
	}
	if bit(1) {
		d.Kids = []nilKid{kid(2), kid(4)}
	}
	if bit(3) {
		d.Attrs = map[string][]string{part(1): nil, part(3): {part(4)}}
	}
	if bit(5) {
		d.Blob = []byte(part(2))
	}
	if bit(7) {
		k := kid(8)
		d.Ptr = &k
	}
	if bit(10) {
		d.Maybe = new(part(5))
	}
	if bit(11) {
		d.Grid = [][]string{nil, {part(6)}}
	}
	if bit(12) {
		d.Nulls = []*string{nil, new(part(7))}
	}
	return d
}

// fillNils is the rule on the value instead of the bytes: every nil slice
// or map reachable without a nil pointer becomes empty.
func fillNils(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fillNils(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fillNils(v.Field(i))
		}
	case reflect.Slice:
		if v.IsNil() {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		}
		for i := range v.Len() {
			fillNils(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			fillNils(e)
			v.SetMapIndex(k, e)
		}
	}
}

// checkEmptyNils: the rewritten bytes are what encoding/json writes for the
// value with its nils filled, and match the output schema.
func checkEmptyNils(t *testing.T, s string, mask uint16) {
	t.Helper()
	schema, err := inferSchema(reflect.TypeFor[nilDoc]())
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEmptyNils(reflect.TypeFor[*nilDoc](), schema)
	doc := nilDocOf(s, mask)
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := e.apply(doc, bytes.Clone(raw))
	fillNils(reflect.ValueOf(doc))
	want, _ := json.Marshal(doc)
	if !bytes.Equal(got, want) {
		t.Fatalf("from %s\n got %s\nwant %s", raw, got, want)
	}
	var v any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	if err := resolved.Validate(v); err != nil {
		t.Fatalf("%s does not match the output schema: %v", got, err)
	}
}

var nilSeeds = []string{"", "a", "null", `"null"`, `\`, `\"`, `a,b,c,d,e,f,g,h`, `{"tags":null},[null],null`, "<&>", "\u2028", "\xff"}

func TestEmptyNilsIsTheRuleOnTheValue(t *testing.T) {
	for _, s := range nilSeeds {
		for _, mask := range []uint16{0, 0xffff, 0x5555, 0xaaaa, 1 << 7, 1<<7 | 1<<8} {
			checkEmptyNils(t, s, mask)
		}
	}
	// Another type than Out (a hook's value) is left as it is.
	if got := newEmptyNils(reflect.TypeFor[*nilDoc](), must(inferSchema(reflect.TypeFor[nilDoc]()))).apply(nilDoc{}, []byte(`{"tags":null}`)); string(got) != `{"tags":null}` {
		t.Errorf("a value of another type was rewritten: %s", got)
	}
}

func FuzzEmptyNils(f *testing.F) {
	for i, s := range nilSeeds {
		f.Add(s, uint16(i*0x1111))
	}
	f.Fuzz(checkEmptyNils)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkEmptyNils is the rewrite alone, on 20 widgets of a list: with
// no null (one bytes.Contains) and with a nil slice in each (scan and copy).
func BenchmarkEmptyNils(b *testing.B) {
	type widget struct {
		ID   string   `json:"id"`
		Tags []string `json:"tags"`
	}
	type shelf struct {
		Widgets []widget `json:"widgets"`
		Next    string   `json:"next,omitempty"`
	}
	schema := must(inferSchema(reflect.TypeFor[shelf]()))
	e := newEmptyNils(reflect.TypeFor[shelf](), schema)
	for _, c := range []struct {
		name string
		tags []string
	}{{"filled", []string{"blue"}}, {"nil", nil}} {
		out := shelf{Widgets: make([]widget, 20)}
		for i := range out.Widgets {
			out.Widgets[i] = widget{ID: "w-" + string(rune('a'+i)), Tags: c.tags}
		}
		raw := must(json.Marshal(out))
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				e.apply(out, raw)
			}
		})
	}
}
