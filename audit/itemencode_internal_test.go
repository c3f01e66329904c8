package audit

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
)

// TestRowAttributesAreMarshalMap: rowAttributes encodes every row as
// attributevalue.MarshalMap does — the zero row, a row with each field set
// alone (so a field added to Row or Object without rowAttributes following
// fails here), and random rows.
func TestRowAttributesAreMarshalMap(t *testing.T) {
	check := func(name string, r *Row) {
		t.Helper()
		want, err := attributevalue.MarshalMap(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowAttributes(r); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, dumpItem(got), dumpItem(want))
		}
	}
	check("zero row", &Row{})
	rng := rand.New(rand.NewPCG(1, 2))
	rt := reflect.TypeFor[Row]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		var r Row
		fill(rng, reflect.ValueOf(&r).Elem().Field(i))
		check("only "+f.Name, &r)
	}
	for i := range 300 {
		var r Row
		v := reflect.ValueOf(&r).Elem()
		for j := range v.NumField() {
			if rng.IntN(2) == 0 {
				fill(rng, v.Field(j))
			}
		}
		check("random row "+string(rune('a'+i%26)), &r)
	}
	// The edges of what MarshalMap omits or keeps.
	local := time.Date(2026, 12, 1, 23, 0, 0, 120, time.FixedZone("x", 3600))
	for name, r := range map[string]*Row{
		"empty dimensions":        {Dimensions: map[string]string{}},
		"empty dimension value":   {Dimensions: map[string]string{"k": ""}},
		"empty object":            {ArgsObject: &Object{}, ResultObject: &Object{VersionID: "v"}},
		"local times":             {StartedAt: local, FinishedAt: &local},
		"zero finish":             {FinishedAt: &time.Time{}},
		"negative and fractional": {DurationMs: -0.000123, MCPRound: -3, ArgsBytes: -1, ResultBytes: -7, ExpiresAt: -9},
		"large numbers":           {DurationMs: 1e21, ArgsBytes: 1 << 62, ExpiresAt: 1<<63 - 1},
	} {
		check(name, r)
	}
}

// fill sets v, a field of Row, to a random non-zero value.
func fill(rng *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString([]string{"a", "é€", " ", "0", "x\x00y", "callId"}[rng.IntN(6)])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(rng.Int64N(1<<40) - 1<<39 + 1)
	case reflect.Float64:
		v.SetFloat([]float64{1, 0.5, 1234.5678, 1e-7, 3e15, -2.25}[rng.IntN(6)])
	case reflect.Map:
		m := map[string]string{}
		for range 1 + rng.IntN(3) {
			m[string(rune('a'+rng.IntN(26)))] = []string{"", "v", "w-1"}[rng.IntN(3)]
		}
		v.Set(reflect.ValueOf(m))
	case reflect.Pointer:
		switch v.Type().Elem() {
		case reflect.TypeFor[Object]():
			o := &Object{Bucket: "b", Key: "k/1"}
			if rng.IntN(2) == 0 {
				o.VersionID = "3"
			}
			v.Set(reflect.ValueOf(o))
		case reflect.TypeFor[time.Time]():
			t := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
			v.Set(reflect.ValueOf(&t))
		default:
			panic("fill: a pointer field of a new type: " + v.Type().String())
		}
	case reflect.Struct:
		if v.Type() != reflect.TypeFor[time.Time]() {
			panic("fill: a struct field of a new type: " + v.Type().String())
		}
		v.Set(reflect.ValueOf(time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()))
	case reflect.Slice:
		if v.Type() != reflect.TypeFor[json.RawMessage]() {
			panic("fill: a slice field of a new type: " + v.Type().String())
		}
		v.Set(reflect.ValueOf(json.RawMessage(`{"a":1}`)))
	default:
		panic("fill: a field of a new kind: " + v.Type().String())
	}
}

func dumpItem(item any) string {
	b, _ := json.Marshal(item)
	return string(b)
}
