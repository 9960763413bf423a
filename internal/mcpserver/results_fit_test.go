package mcpserver_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/mcpserver"
)

// TestResultsFitSchemas fills every registered tool's result type (every
// toolset on) with random values (nil and empty pointers, slices and
// maps, any JSON in interface fields, fractional numbers) and checks that
// they marshal to JSON its output schema accepts. tool.Add checks every
// result on every call, so a mismatch would reach a client as an error;
// this finds it first.
func TestResultsFitSchemas(t *testing.T) {
	results := newFakeServer(t, fakeOptions{upstreams: true, tweak: func(c *config.Config) { c.Toolsets = mcpserver.Toolsets }}).Results()
	for name, r := range results {
		s, ok := r.Schema.(*jsonschema.Schema)
		if !ok {
			t.Errorf("%s: output schema %T, want a *jsonschema.Schema", name, r.Schema)
			continue
		}
		holdsForRandomValues(t, name, r.Out, s)
	}
	t.Logf("%d tools", len(results))
}

// holdsForRandomValues validates 300 random values of typ against s.
func holdsForRandomValues(t *testing.T, name string, typ reflect.Type, s *jsonschema.Schema) {
	t.Helper()
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(name))))
	for i := range 300 {
		v := randomValue(rng, typ, 0)
		b, err := json.Marshal(v.Interface())
		if err != nil {
			continue // not a schema matter: Add reports a marshalling error
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := rs.Validate(&doc); err != nil {
			t.Fatalf("%s: value %d does not fit the output schema: %v\n%s", name, i, err, b)
		}
	}
}

// randomValue is a random value of t: a third of pointers, slices, maps
// and interfaces are nil, containers hold up to three elements, an
// interface holds a random JSON value and a json.RawMessage a random JSON
// object.
func randomValue(rng *rand.Rand, t reflect.Type, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	if depth > 6 {
		return v
	}
	nilOne := rng.IntN(3) == 0
	if t == reflect.TypeFor[json.RawMessage]() {
		// A raw message in a result is a value codexec marshalled (a
		// background run's result object), never arbitrary bytes.
		if !nilOne {
			b, _ := json.Marshal(map[string]any{"k": randomJSON(rng, depth)})
			v.SetBytes(b)
		}
		return v
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(200)) - 100)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(rng.IntN(200)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(rng.NormFloat64() * 100)
	case reflect.String:
		v.SetString([]string{"", "x", "a\nb", "ünï"}[rng.IntN(4)])
	case reflect.Pointer:
		if !nilOne {
			v.Set(randomValue(rng, t.Elem(), depth+1).Addr())
		}
	case reflect.Slice:
		if !nilOne {
			n := rng.IntN(4)
			v.Set(reflect.MakeSlice(t, n, n))
			for i := range n {
				v.Index(i).Set(randomValue(rng, t.Elem(), depth+1))
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			v.Index(i).Set(randomValue(rng, t.Elem(), depth+1))
		}
	case reflect.Map:
		if !nilOne {
			v.Set(reflect.MakeMap(t))
			for range rng.IntN(4) {
				v.SetMapIndex(randomValue(rng, t.Key(), depth+1), randomValue(rng, t.Elem(), depth+1))
			}
		}
	case reflect.Interface:
		if !nilOne {
			if j := randomJSON(rng, depth); j != nil && reflect.TypeOf(j).Implements(t) {
				v.Set(reflect.ValueOf(j))
			}
		}
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(rng.Int64N(4e9), 0)))
			break
		}
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(randomValue(rng, t.Field(i).Type, depth+1))
			}
		}
	}
	return v
}

// randomJSON is a random JSON value as encoding/json decodes one.
func randomJSON(rng *rand.Rand, depth int) any {
	switch rng.IntN(6) {
	case 0:
		return "s"
	case 1:
		return 1.5
	case 2:
		return true
	case 3:
		if depth < 4 {
			return map[string]any{"k": randomJSON(rng, depth+1)}
		}
	case 4:
		if depth < 4 {
			return []any{randomJSON(rng, depth+1)}
		}
	}
	return nil
}
