package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
)

// Add checks every result against its tool's output schema, as the SDK
// would. For most result types that check cannot fail: the schemas are
// shape only (types and nesting, no required lists, enums or bounds) and
// derived from the very Go type whose values are marshalled. Fits proves
// that once, when the tool is added, by walking the Go type beside its
// schema the way encoding/json marshals it; Add then skips the per-call
// check (unmarshal and validate, ~40 µs of CPU a call) for that tool.
//
// The proof is conservative: it says "may not fit" for anything it does
// not model, so the check stays for a custom MarshalJSON or MarshalText, an
// interface-typed value whose schema is narrower than any JSON value, a
// []byte (base64 text against an array schema), a ",string" option, a
// schema with any keyword beyond type, properties, items and anyOf, a
// top-level pointer (nil marshals as null), and anything else it cannot
// see through.

// Fits reports whether every value of t marshals (when it marshals at all)
// to JSON that s accepts; false when it cannot tell.
func Fits(t reflect.Type, s *jsonschema.Schema) bool {
	p := prover{seen: map[proofKey]bool{}}
	return p.fits(t, s)
}

// proofKey is a (type, schema) pair under proof; meeting it again while
// proving it (a recursive type) may assume it, as the proof of the whole
// covers it. The mark goes when its proof ends, whatever the outcome, so
// no other proof leans on an assumption that turned out false.
type proofKey struct {
	t reflect.Type
	s *jsonschema.Schema
}

type prover struct {
	seen map[proofKey]bool
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// fits is fits for a value that may be null where t can be (a nil pointer,
// slice or map).
func (p prover) fits(t reflect.Type, s *jsonschema.Schema) bool {
	if acceptsAny(s) {
		return true
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if !acceptsNull(s) {
			return false
		}
	case reflect.Interface:
		return false // nil is null, and anything else may be anything
	}
	return p.fitsValue(t, s)
}

// fitsValue reports whether every value of t other than null (a non-nil
// pointer, slice or map) marshals to JSON that s accepts.
func (p prover) fitsValue(t reflect.Type, s *jsonschema.Schema) bool {
	if acceptsAny(s) {
		return true
	}
	if t.Kind() == reflect.Pointer {
		return p.fits(t.Elem(), s) // a non-nil pointer marshals what it points at, a nil one inside it as null
	}
	if !shapeKeywordsOnly(s) {
		return false
	}
	kind, ok := jsonKind(t)
	if !ok || !typeAllows(s, kind) {
		return false
	}
	key := proofKey{t, s}
	if p.seen[key] {
		return true
	}
	p.seen[key] = true
	defer delete(p.seen, key)
	if !p.contentFits(t, s) {
		return false
	}
	if len(s.AnyOf) == 0 {
		return true
	}
	return slices.ContainsFunc(s.AnyOf, func(b *jsonschema.Schema) bool { return p.fitsValue(t, b) })
}

// contentFits checks the properties and items of s against t's fields,
// map values or elements.
func (p prover) contentFits(t reflect.Type, s *jsonschema.Schema) bool {
	switch {
	case t == timeType:
		return true
	case t.Kind() == reflect.Struct:
		return p.fieldsFit(t, s, nil)
	case t.Kind() == reflect.Map:
		for _, prop := range s.Properties {
			if !p.fits(t.Elem(), prop) {
				return false
			}
		}
		return true
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return s.Items == nil || p.fits(t.Elem(), s.Items)
	}
	return true
}

// fieldsFit checks every field encoding/json writes for struct t against
// its property in s (a field without one is an additional property, which
// a shape-only schema allows). Embedded structs are walked as the fields
// they promote; every candidate of a name is checked, so whichever
// encoding/json picks fits. outer are the structs t is embedded in.
func (p prover) fieldsFit(t reflect.Type, s *jsonschema.Schema, outer []reflect.Type) bool {
	if slices.Contains(outer, t) {
		return true // embedded in itself: encoding/json stops there too
	}
	outer = append(outer, t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if hasOption(opts, "string") || !validName(name) {
			return false // numbers and booleans become strings; a bad name falls back to the Go one
		}
		et := f.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		switch {
		case f.Anonymous && !f.IsExported() && et.Kind() != reflect.Struct, !f.Anonymous && !f.IsExported():
			continue // encoding/json leaves it out
		case f.Anonymous && name == "" && et.Kind() == reflect.Struct:
			// Flattened: its fields are the outer object's (its own
			// marshaler, if it has one, is not used).
			if !p.fieldsFit(et, s, outer) {
				return false
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop, ok := s.Properties[name]
		if !ok {
			continue
		}
		omits := hasOption(opts, "omitempty") || hasOption(opts, "omitzero")
		if !p.fieldFits(f.Type, prop, omits) {
			return false
		}
	}
	return true
}

// fieldFits checks one field of type t against its property schema; a
// field that omits its empty value never writes a nil pointer, slice or
// map as null.
func (p prover) fieldFits(t reflect.Type, s *jsonschema.Schema, omits bool) bool {
	if !omits {
		return p.fits(t, s)
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return p.fitsValue(t, s)
	}
	return p.fits(t, s)
}

// jsonKind is the JSON type t's values marshal to (other than null); ok is
// false for types whose JSON fits tells nothing about (custom marshalers,
// []byte as base64, interfaces, channels, functions, complex numbers).
func jsonKind(t reflect.Type) (kind string, ok bool) {
	if t == timeType {
		return "string", true // RFC 3339 text, or a marshalling error
	}
	if implementsMarshaler(t) {
		return "", false
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean", true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer", true
	case reflect.Float32, reflect.Float64:
		return "number", true
	case reflect.String:
		return "string", true
	case reflect.Struct, reflect.Map:
		return "object", t.Kind() == reflect.Struct || t.Key().Kind() == reflect.String
	case reflect.Slice:
		return "array", t.Elem().Kind() != reflect.Uint8
	case reflect.Array:
		return "array", true
	}
	return "", false
}

// implementsMarshaler reports whether encoding/json would hand t's values
// (or their addresses) to a MarshalJSON or MarshalText of their own.
func implementsMarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(marshalerType) || t.Implements(textType) || pt.Implements(marshalerType) || pt.Implements(textType)
}

// validName reports whether encoding/json takes name from a tag as the
// member name ("" takes the field's name).
func validName(name string) bool {
	for _, c := range name {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// typeAllows reports whether s's type keyword admits JSON kind (an
// integer is a number too).
func typeAllows(s *jsonschema.Schema, kind string) bool {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	return len(types) == 0 || slices.Contains(types, kind) || (kind == "integer" && slices.Contains(types, "number"))
}

// acceptsNull reports whether s accepts null.
func acceptsNull(s *jsonschema.Schema) bool {
	if acceptsAny(s) {
		return true
	}
	if !shapeKeywordsOnly(s) || !typeAllows(s, "null") {
		return false
	}
	return len(s.AnyOf) == 0 || slices.ContainsFunc(s.AnyOf, acceptsNull)
}

// allJSON are the JSON types (integer is within number).
var allJSON = []string{"string", "number", "boolean", "object", "array", "null"}

// acceptsAny reports whether s accepts every JSON value: it constrains
// nothing, or it is anyOf branches that each constrain nothing but their
// type and together cover every type (Portable's spelling of a Go any).
func acceptsAny(s *jsonschema.Schema) bool {
	if s == nil || annotationOnly(*s) {
		return true
	}
	c := *s
	c.AnyOf = nil
	if !annotationOnly(c) {
		return false
	}
	var covered []string
	for _, b := range s.AnyOf {
		bc := *b
		bc.Type = ""
		if len(bc.Properties) == 0 {
			bc.Properties = nil
		}
		if !annotationOnly(bc) || b.Type == "" {
			continue
		}
		covered = append(covered, b.Type)
	}
	for _, t := range allJSON {
		if !slices.Contains(covered, t) {
			return false
		}
	}
	return true
}

// annotationOnly reports whether s says nothing a value can fail: at most
// a title, description, comment or examples.
func annotationOnly(s jsonschema.Schema) bool {
	s.Title, s.Description, s.Comment, s.Examples, s.PropertyOrder = "", "", "", nil, nil
	return reflect.ValueOf(s).IsZero()
}

// shapeKeywordsOnly reports whether s uses no keyword but type, properties,
// items and anyOf (and annotations): what fits models.
func shapeKeywordsOnly(s *jsonschema.Schema) bool {
	c := *s
	c.Type, c.Types, c.Properties, c.Items, c.AnyOf = "", nil, nil, nil, nil
	return annotationOnly(c)
}
