package stdiowire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodedMembers is what members must agree with: encoding/json's decoding
// of the object into a map of raw values, and the nesting and member count
// found by a byte-at-a-time scan.
func decodedMembers(t testing.TB, obj []byte) (map[string]json.RawMessage, int, int) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(obj, &env); err != nil {
		t.Fatal(err)
	}
	d, deepest, count, inString, escaped := 0, 0, 0, false, false
	for _, b := range obj {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped, inString = b == '\\', b != '"'
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			d++
			deepest = max(deepest, d)
		case b == '}' || b == ']':
			d--
		case b == ':' && d == 1:
			count++
		}
	}
	return env, deepest, count
}

// FuzzMembers checks members against encoding/json on every valid object.
func FuzzMembers(f *testing.F) {
	for _, tc := range checkCases {
		f.Add(tc.line)
	}
	for _, s := range []string{
		`{}`, ` { "a" : 1 , "a" : [ ] } `, `{"a\"b":"x\\","c":{"d":[1,{"e":"}"}]},"f":-1.5e+3}`,
		`{"\u0069d":7,"id":"q\\\""}`, `{"k":true,"l":false,"m":null,"n":[[[["]"]]]]}`, "{\"\xff\":1}",
		`{"content_base64":"` + strings.Repeat("QUJD", 1000) + `","x":0}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		obj := bytes.TrimSpace([]byte(s))
		if !json.Valid(obj) || obj[0] != '{' {
			return
		}
		env, deepest, count := members(obj)
		wantEnv, wantDeepest, wantCount := decodedMembers(t, obj)
		if diff := cmp.Diff(wantEnv, env); diff != "" || deepest != wantDeepest || count != wantCount {
			t.Errorf("members(%q): depth %d count %d, want %d %d; members (-want +got):\n%s", s, deepest, count, wantDeepest, wantCount, diff)
		}
	})
}

// FuzzValid holds valid to json.Valid.
func FuzzValid(f *testing.F) {
	for _, tc := range checkCases {
		f.Add(tc.line)
	}
	for _, s := range []string{
		``, ` `, `1`, `-0`, `01`, `-`, `1.`, `1.5e`, `1e+9`, `2E-3`, `.5`, `+1`, `"a\u00e9\/\b"`, `"\u12"`, `"\x"`,
		"\"\x01\"", "\"\xff\x00\"", `[]`, `[1,]`, `[,1]`, `{}`, `{,}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{1:2}`,
		` {"a" : [ true , false , null ] } `, `truex`, `nul`, `[1 2]`, `{"a":1}{}`, `[[[]]]`, `[[[]]`, `"unterminated`,
		strings.Repeat("[", maxValidDepth) + strings.Repeat("]", maxValidDepth),
		strings.Repeat("[", maxValidDepth+1) + strings.Repeat("]", maxValidDepth+1),
		strings.Repeat(`{"a":`, maxValidDepth) + `{}` + strings.Repeat("}", maxValidDepth),
		strings.Repeat(`{"a":`, maxValidDepth-1) + `{}` + strings.Repeat("}", maxValidDepth-1),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("valid(%q) = %v, json.Valid %v", s, got, want)
		}
	})
}
