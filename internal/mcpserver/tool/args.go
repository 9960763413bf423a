package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sjson "github.com/segmentio/encoding/json"
)

// decodeArgs validates a call's arguments against the tool's input schema
// and decodes them into dst. Every failure is an INVALID_PARAMS error whose
// message names the argument and what it must be, in plain words
// ("timeout_ms must be an integer (got string "1000")").
//
// dst is decoded from the arguments as sent, not from a float64 copy, so an
// integer keeps every digit and one beyond its Go type is refused instead of
// wrapping around. Field names match exactly (as the schema does), not
// case-insensitively as encoding/json would, which is why the decoder is
// the one the SDK itself uses. Schema defaults are not applied: handlers
// treat an absent argument as its default.
func decodeArgs(raw any, schema *jsonschema.Resolved, dst any) error {
	data, err := argsJSON(raw)
	if err != nil {
		return err
	}
	var parsed any
	if err := parseAny(data, &parsed); err != nil {
		return Invalidf("arguments must be a JSON object (%v)", err)
	}
	v, ok := parsed.(map[string]any)
	if !ok {
		return Invalidf("arguments must be a JSON object (got %s)", describe(parsed))
	}
	var anyV any = v
	if err := schema.Validate(&anyV); err != nil {
		return Invalidf("%s", explain(schema.Schema(), v, err))
	}
	// Parse, not a Decoder over a reader: the arguments are in memory
	// already, and the Decoder would copy them into buffers it grows.
	if _, err := sjson.Parse(data, dst, sjson.DontMatchCaseInsensitiveStructFields|inPlace(data)); err != nil {
		return Invalidf("%s", decodeError(err, data))
	}
	return nil
}

// bigArgs is the size of arguments whose strings are read in place (an
// upload's content): copying them would cost as much again per decode.
const bigArgs = 64 << 10

// inPlace is the flag that makes the decoder point strings into data
// instead of copying them, for big arguments only: such a string keeps the
// whole arguments' buffer alive, which for a small call could outlast it
// needlessly (a session's code history).
func inPlace(data []byte) sjson.ParseFlags {
	if len(data) < bigArgs {
		return 0
	}
	return sjson.DontCopyString
}

// parseAny decodes data into v as encoding/json does, for the schema
// check; big arguments are decoded in place (inPlace), and the check only
// reads them during the call.
func parseAny(data []byte, v *any) error {
	if len(data) < bigArgs {
		return json.Unmarshal(data, v)
	}
	rest, err := sjson.Parse(data, v, sjson.DontCopyString)
	if err == nil && len(bytes.TrimSpace(rest)) > 0 {
		err = fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	return err
}

// argsJSON is the arguments of a call as JSON text ({} when absent).
func argsJSON(raw any) ([]byte, error) {
	switch a := raw.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		if len(bytes.TrimSpace(a)) == 0 || string(bytes.TrimSpace(a)) == "null" {
			return []byte("{}"), nil
		}
		return a, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, Invalidf("arguments must be a JSON object (%v)", err)
	}
	return b, nil
}

// decodeError explains a decoding failure that the schema let through: in
// practice an integer beyond its Go type. The value shown is the
// argument's text in data.
func decodeError(err error, data []byte) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" || te.Type == nil {
		return "arguments: " + err.Error()
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(data, &fields)
	got := strings.TrimSpace(string(fields[te.Field]))
	if got == "" || len(got) > 40 {
		got = "a value out of range"
	}
	switch k := te.Type.Kind().String(); {
	case strings.HasPrefix(k, "int"):
		return fmt.Sprintf("%s must be an integer from %d to %d (got %s)", te.Field, minInt(te.Type.Bits()), maxInt(te.Type.Bits()), got)
	case strings.HasPrefix(k, "uint"):
		return fmt.Sprintf("%s must be an integer from 0 to %d (got %s)", te.Field, ^uint64(0)>>(64-te.Type.Bits()), got)
	}
	return fmt.Sprintf("%s must be %s (got %s)", te.Field, typeWords(te.Type.Kind().String()), got)
}

// minInt and maxInt are the bounds of a signed integer of the given bits.
func minInt(bits int) int64 { return -1 << (bits - 1) }
func maxInt(bits int) int64 { return 1<<(bits-1) - 1 }

// explain finds the first argument of v that schema s rejects and says why
// in plain words; the validator's own text is the fallback.
func explain(s *jsonschema.Schema, v map[string]any, verr error) string {
	for _, name := range s.Required {
		if _, ok := v[name]; !ok {
			return name + " is required"
		}
	}
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		if p := s.Properties[name]; p != nil {
			if msg := explainValue(name, p, v[name]); msg != "" {
				return msg
			}
		}
	}
	return "invalid arguments: " + verr.Error()
}

// explainValue says why value does not fit p ("" when it does, as far as
// types, enums, ranges and lengths go).
func explainValue(name string, p *jsonschema.Schema, value any) string {
	types := schemaTypes(p)
	got := jsonType(value)
	if len(types) > 0 && !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
		var words []string
		for _, t := range types {
			if t != "null" || len(types) == 1 { // an optional argument may be null; saying so does not help
				words = append(words, typeWords(t))
			}
		}
		return fmt.Sprintf("%s must be %s (got %s)", name, strings.Join(words, " or "), describe(value))
	}
	if len(p.Enum) > 0 && !slices.ContainsFunc(p.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(value) }) {
		opts := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			opts[i] = fmt.Sprint(e)
		}
		return fmt.Sprintf("%s must be one of %s (got %s)", name, strings.Join(opts, ", "), describe(value))
	}
	if f, ok := value.(float64); ok {
		if p.Minimum != nil && f < *p.Minimum {
			return fmt.Sprintf("%s must be at least %v (got %v)", name, *p.Minimum, f)
		}
		if p.Maximum != nil && f > *p.Maximum {
			return fmt.Sprintf("%s must be at most %v (got %v)", name, *p.Maximum, f)
		}
	}
	if a, ok := value.([]any); ok && p.Items != nil {
		for i, e := range a {
			if msg := explainValue(fmt.Sprintf("%s[%d]", name, i), p.Items, e); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// schemaTypes lists the JSON types p accepts: its type or types, or those
// of its anyOf/oneOf branches (a nullable written as anyOf).
func schemaTypes(p *jsonschema.Schema) []string {
	if p.Type != "" {
		return []string{p.Type}
	}
	if len(p.Types) > 0 {
		return p.Types
	}
	var out []string
	for _, b := range append(slices.Clone(p.AnyOf), p.OneOf...) {
		t := schemaTypes(b)
		if len(t) == 0 {
			return nil // a branch of any type
		}
		out = append(out, t...)
	}
	return out
}

// jsonType is the JSON Schema type of a decoded JSON value.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// typeWords names a JSON type (or Go kind) with its article.
func typeWords(t string) string {
	switch t {
	case "integer", "int", "int64", "int32":
		return "an integer"
	case "array", "slice":
		return "an array"
	case "object", "map", "struct":
		return "an object"
	case "boolean", "bool":
		return "a boolean (true or false)"
	case "null":
		return "null"
	}
	return "a " + t
}

// describe shows a rejected value briefly: its type and, for scalars, the
// value itself (strings quoted, cut at 40 bytes).
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return "string " + strconv.Quote(x)
	case float64:
		return "number " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case nil:
		return "null"
	}
	return typeWords(jsonType(v))
}
