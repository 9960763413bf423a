package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type fitsInner struct {
	N int    `json:"n"`
	S string `json:"s,omitempty"`
}

type fitsPlain struct {
	B     bool              `json:"b"`
	I     int64             `json:"i"`
	F     float64           `json:"f"`
	S     string            `json:"s"`
	P     *int              `json:"p"`
	PO    *string           `json:"po,omitempty"`
	L     []string          `json:"l"`
	LO    []fitsInner       `json:"lo,omitempty"`
	M     map[string]int    `json:"m,omitempty"`
	T     time.Time         `json:"t"`
	TP    *time.Time        `json:"tp,omitempty"`
	In    fitsInner         `json:"in"`
	InP   *fitsInner        `json:"inp"`
	Any   any               `json:"any,omitempty"`
	Skip  func()            `json:"-"`
	MM    map[string][]bool `json:"mm,omitempty"`
	hid   chan int
	Plain int
}

type fitsEmbedded struct {
	fitsInner
	*fitsPlain
	Extra string `json:"extra"`
}

type fitsHidden struct {
	N int `json:"n"`
}

// fitsNamedHidden embeds an unexported struct type under a JSON name:
// encoding/json writes it as that member.
type fitsNamedHidden struct {
	fitsHidden `json:"h"`
}

// fitsFlatHidden embeds it without one: its fields are promoted.
type fitsFlatHidden struct {
	fitsHidden
}

type fitsBadTag struct {
	N int `json:"a\\b"`
}

type fitsTree struct {
	Name     string      `json:"name"`
	Children []*fitsTree `json:"children"`
}

type fitsCustom struct{ X int }

func (fitsCustom) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

type fitsText struct{ X int }

func (*fitsText) MarshalText() ([]byte, error) { return []byte("x"), nil }

type fitsWithCustom struct {
	C fitsCustom `json:"c"`
}

type fitsWithText struct {
	C fitsText `json:"c"`
}

type fitsBytes struct {
	B []byte `json:"b"`
}

type fitsRaw struct {
	R json.RawMessage `json:"r"`
}

type fitsStringOpt struct {
	N int `json:"n,string"`
}

type fitsArray struct {
	A [2]int `json:"a"`
}

type fitsNilMap struct {
	M map[string]int `json:"m"`
}

type fitsIface struct {
	V any `json:"v"`
}

type fitsIntKeys struct {
	M map[int]string `json:"m"`
}

type fitsAnimal interface{ Sound() string }

type fitsNarrowIface struct {
	A fitsAnimal `json:"a"`
}

// treeSchema is fitsTree's schema (the inference refuses recursive
// types), its name of type nameType, as a cycle of schemas.
func treeSchema(nameType string) *jsonschema.Schema {
	node := &jsonschema.Schema{Type: "object"}
	item := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{node, {Type: "null"}}}
	node.Properties = map[string]*jsonschema.Schema{
		"name":     {Type: nameType},
		"children": {AnyOf: []*jsonschema.Schema{{Type: "array", Items: item}, {Type: "null"}}},
	}
	return node
}

// narrowed is T's output schema with edit applied.
func narrowed[T any](edit func(*jsonschema.Schema)) *jsonschema.Schema {
	s := OutputSchema[T]()
	edit(s)
	return s
}

// TestFits holds the proof to the types it may skip the check for, and to
// the ones it must not.
func TestFits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		schema *jsonschema.Schema
		want   bool
	}{
		{"plain fields, pointers, slices, maps, time, any", reflect.TypeFor[fitsPlain](), OutputSchema[fitsPlain](), true},
		{"embedded structs", reflect.TypeFor[fitsEmbedded](), OutputSchema[fitsEmbedded](), true},
		{"unexported embedded struct under a name", reflect.TypeFor[fitsNamedHidden](), OutputSchema[fitsNamedHidden](), true},
		{"unexported embedded struct under a name, wrong inside", reflect.TypeFor[fitsNamedHidden](),
			narrowed[fitsNamedHidden](func(s *jsonschema.Schema) {
				s.Properties["h"] = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "string"}}}
			}), false},
		{"unexported embedded struct, promoted, wrong", reflect.TypeFor[fitsFlatHidden](),
			narrowed[fitsFlatHidden](func(s *jsonschema.Schema) { s.Properties["n"] = &jsonschema.Schema{Type: "string"} }), false},
		{"a tag name encoding/json refuses (not modelled: kept)", reflect.TypeFor[fitsBadTag](), &jsonschema.Schema{Type: "object"}, false},
		{"recursive type", reflect.TypeFor[fitsTree](), treeSchema("string"), true},
		{"recursive type, wrong inside", reflect.TypeFor[fitsTree](), treeSchema("integer"), false},
		{"any value against no constraint", reflect.TypeFor[fitsIface](), OutputSchema[fitsIface](), true},
		{"nil schema", reflect.TypeFor[fitsCustom](), nil, true},
		{"custom MarshalJSON", reflect.TypeFor[fitsWithCustom](), OutputSchema[fitsWithCustom](), false},
		{"custom MarshalText on the pointer", reflect.TypeFor[fitsWithText](), OutputSchema[fitsWithText](), false},
		{"[]byte marshals as base64 text", reflect.TypeFor[fitsBytes](), OutputSchema[fitsBytes](), false},
		{"json.RawMessage", reflect.TypeFor[fitsRaw](), OutputSchema[fitsRaw](), false},
		{",string option", reflect.TypeFor[fitsStringOpt](), OutputSchema[fitsStringOpt](), false},
		{"map with int keys (not modelled: kept)", reflect.TypeFor[fitsIntKeys](), &jsonschema.Schema{Type: "object",
			Properties: map[string]*jsonschema.Schema{"m": {Type: "object", Properties: map[string]*jsonschema.Schema{}}}}, false},
		{"top-level pointer marshals nil as null", reflect.TypeFor[*fitsInner](), OutputSchema[fitsInner](), false},
		{"interface with a schema narrower than any", reflect.TypeFor[fitsIface](),
			narrowed[fitsIface](func(s *jsonschema.Schema) { s.Properties["v"] = &jsonschema.Schema{Type: "string"} }), false},
		{"interface type of its own against any", reflect.TypeFor[fitsNarrowIface](), OutputSchema[fitsNarrowIface](), true},
		{"fixed-size array (bounds: kept)", reflect.TypeFor[fitsArray](), OutputSchema[fitsArray](), false},
		{"nil map against a non-null object", reflect.TypeFor[fitsNilMap](), OutputSchema[fitsNilMap](), false},
		{"enum", reflect.TypeFor[fitsInner](),
			narrowed[fitsInner](func(s *jsonschema.Schema) { s.Properties["s"].Enum = []any{"a"} }), false},
		{"bounds", reflect.TypeFor[fitsInner](),
			narrowed[fitsInner](func(s *jsonschema.Schema) { s.Properties["n"].Minimum = new(float64) }), false},
		{"required", reflect.TypeFor[fitsInner](),
			narrowed[fitsInner](func(s *jsonschema.Schema) { s.Required = []string{"s"} }), false},
		{"additionalProperties false", reflect.TypeFor[fitsInner](),
			narrowed[fitsInner](func(s *jsonschema.Schema) { s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}} }), false},
		{"float against integer", reflect.TypeFor[fitsPlain](),
			narrowed[fitsPlain](func(s *jsonschema.Schema) { s.Properties["f"].Type = "integer" }), false},
		{"nullable slice against a non-null schema", reflect.TypeFor[fitsPlain](),
			narrowed[fitsPlain](func(s *jsonschema.Schema) { s.Properties["l"] = &jsonschema.Schema{Type: "array"} }), false},
		{"nested field of the wrong type", reflect.TypeFor[fitsPlain](),
			narrowed[fitsPlain](func(s *jsonschema.Schema) {
				s.Properties["lo"].Items.Properties["n"] = &jsonschema.Schema{Type: "string"}
			}), false},
		{"a property the type lacks", reflect.TypeFor[fitsInner](),
			narrowed[fitsInner](func(s *jsonschema.Schema) { s.Properties["other"] = &jsonschema.Schema{Type: "string"} }), true},
		{"a property the schema lacks", reflect.TypeFor[fitsInner](),
			narrowed[fitsInner](func(s *jsonschema.Schema) { delete(s.Properties, "s") }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fits(tc.typ, tc.schema); got != tc.want {
				t.Errorf("fits = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestResultCheckKept: a tool whose result type may not fit its schema
// keeps the per-call check, and a result that does not fit is refused.
func TestResultCheckKept(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	r := NewRegistrar(srv)
	narrow := narrowed[fitsIface](func(s *jsonschema.Schema) { s.Properties["v"] = &jsonschema.Schema{Type: "string"} })
	Add(r, &mcp.Tool{Name: "narrow", OutputSchema: narrow}, func(ctx context.Context, _ *mcp.CallToolRequest, _ EmptyIn) (*mcp.CallToolResult, fitsIface, error) {
		return nil, fitsIface{V: 42}, nil
	})
	Add(r, &mcp.Tool{Name: "custom"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ EmptyIn) (*mcp.CallToolResult, fitsWithCustom, error) {
		return nil, fitsWithCustom{}, nil
	})
	Add(r, &mcp.Tool{Name: "plain"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ EmptyIn) (*mcp.CallToolResult, fitsInner, error) {
		return nil, fitsInner{N: 1}, nil
	})
	checks := r.ResultChecks()
	for name, want := range map[string]bool{"narrow": true, "custom": true, "plain": false} {
		if checks[name].Checked != want {
			t.Errorf("%s: checked = %v, want %v", name, checks[name].Checked, want)
		}
	}
	cs := connect(t, srv)
	for name, wantErr := range map[string]string{
		"narrow": "does not match the output schema",
		"custom": "does not match the output schema", // "x" is not an object
		"plain":  "",
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := ""
		if res.IsError {
			got = res.Content[0].(*mcp.TextContent).Text
		}
		if (wantErr == "") != (got == "") || !strings.Contains(got, wantErr) {
			t.Errorf("%s: error %q, want one containing %q", name, got, wantErr)
		}
	}
}
