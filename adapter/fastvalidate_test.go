package adapter

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	json "github.com/segmentio/encoding/json"
)

type fastNested struct {
	Name  string            `json:"name"`
	Tags  []string          `json:"tags,omitempty"`
	Level uint8             `json:"level,omitempty"`
	Ratio float64           `json:"ratio,omitempty"`
	On    *bool             `json:"on,omitempty"`
	Meta  map[string]int    `json:"meta,omitempty"`
	Any   any               `json:"any,omitempty"`
	Sub   *fastFlat         `json:"sub,omitempty"`
	Raw   map[string]string `json:"raw"`
}

type fastPortable struct {
	fastNested
	Blob []byte `json:"blob,omitempty"`
}

type fastFlat struct {
	EntityID string `json:"entityId" jsonschema:"the widget acted on"`
	SleepMs  int    `json:"sleepMs,omitempty"`
	Note     string `json:"note,omitempty"`
}

// fastCases are the schemas the property is checked against: inferred
// ones, and given ones the fast path must refuse to read.
func fastCases(t testing.TB) []*jsonschema.Schema {
	flat, err := jsonschema.For[fastFlat](nil)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := jsonschema.For[fastNested](nil)
	if err != nil {
		t.Fatal(err)
	}
	// The schema Define infers: no null for a slice, a map or an omitted
	// pointer; a []byte is a base64 string.
	portable, err := inferSchema(reflect.TypeFor[fastPortable]())
	if err != nil {
		t.Fatal(err)
	}
	withEnum := flat.CloneSchemas()
	withEnum.Properties["note"].Enum = []any{"a"}
	open := &jsonschema.Schema{Type: "object", Required: []string{"x"}}
	return []*jsonschema.Schema{flat, nested, withEnum, open, portable}
}

var fastSeeds = []string{
	`{"entityId":"w-1","note":"hello"}`, `{"entityId":"w-1","sleepMs":5}`, `{"entityId":"w-1","sleepMs":5.0}`,
	`{"entityId":"w-1","sleepMs":5.5}`, `{"entityId":1}`, `{"entityId":null}`, `{}`, `{"note":"x"}`,
	`{"entityId":"w","extra":1}`, `{ "entityId" : "w\u00e9\n" , "note":"\ud83d\ude00" }`, `{"entityId":"w","entityId":2}`,
	`{"name":"n","raw":{}}`, `{"name":"n","raw":{"a":"b"},"tags":["x","y"],"level":255,"ratio":-0.25,"on":true}`,
	`{"name":"n","raw":{},"level":256}`, `{"name":"n","raw":{},"level":-1}`, `{"name":"n","raw":null}`,
	`{"name":"n","raw":{},"tags":null,"on":null,"meta":{"a":1,"b":2.0}}`, `{"name":"n","raw":{},"any":[1e999]}`,
	`{"name":"n","raw":{},"sub":{"entityId":"m"},"any":{"z":[null,false]}}`, `{"name":"n","raw":{},"sub":{"note":"m"}}`, `{"x":1e400}`,
	`{"x":"\udc00"}`, "{\"x\":\"\xff\"}", `{"x":[1,2,]}`, `{"x":01}`, `{"x":-}`, `{"x":1}`, `[]`, `{"x":"a"} x`,
	`{"entityId":"w-1","sleepMs":123456789012345678}`, `{"entityId":"w-1","sleepMs":-0}`,
	`{"name":"n","raw":{},"blob":"aGk="}`, `{"name":"n","raw":{},"blob":null}`, `{"name":"n","raw":{},"blob":[104]}`,
}

// checkFast: whenever the fast path says valid, decoding into a value
// succeeds and jsonschema-go validates it; the fast path never decides a
// failure, so error answers are jsonschema-go's.
func checkFast(t *testing.T, s *jsonschema.Schema, args []byte) bool {
	fs := compileFast(s)
	if !fs.valid(args) {
		return false
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		t.Fatalf("fast path accepted %s, which does not decode: %v", args, err)
	}
	if err := r.Validate(v); err != nil {
		t.Fatalf("fast path accepted %s, which jsonschema-go refuses: %v", args, err)
	}
	return true
}

func TestFastSchemaAcceptsOnlyWhatJSONSchemaAccepts(t *testing.T) {
	cases := fastCases(t)
	if compileFast(cases[2]) != nil {
		t.Error("a schema with enum must not take the fast path")
	}
	if compileFast(cases[4]) == nil {
		t.Error("an inferred schema with a []byte must take the fast path")
	}
	accepted := 0
	for _, s := range cases {
		for _, a := range fastSeeds {
			if checkFast(t, s, bytes.TrimSpace([]byte(a))) {
				accepted++
			}
		}
	}
	if accepted < 6 {
		t.Errorf("the fast path accepted only %d seeds", accepted)
	}
	// The benchmark's arguments take the fast path.
	if !compileFast(cases[0]).valid([]byte(`{"entityId":"w-1","note":"hello"}`)) {
		t.Error("typical arguments do not take the fast path")
	}
}

func FuzzFastSchema(f *testing.F) {
	for _, a := range fastSeeds {
		f.Add([]byte(a))
	}
	cases := fastCases(f)
	f.Fuzz(func(t *testing.T, args []byte) {
		args = bytes.TrimSpace(args)
		for _, s := range cases {
			checkFast(t, s, args)
		}
	})
}
