package stdiowire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// members walks a JSON object already found valid (valid) once and
// returns its members as encoding/json decodes them into a map (names
// unescaped, the last of a repeated name wins) with each value a slice of
// obj, not a copy, together with the deepest nesting of objects and arrays
// (obj itself is depth 1) and the number of members, repeats counted. It
// relies on obj being valid JSON, which lets it skip strings at the speed
// of a byte search: an upload's base64 string is megabytes, and this walk
// replaces three passes of encoding/json's scanner over it.
func members(obj []byte) (env map[string]json.RawMessage, deepest, count int) {
	env = map[string]json.RawMessage{}
	deepest = 1
	i := skipSpace(obj, 1) // past '{'
	for obj[i] != '}' {
		end := skipString(obj, i)
		name := memberName(obj[i:end])
		i = skipSpace(obj, skipSpace(obj, end)+1) // past ':'
		vend := skipValue(obj, i, 1, &deepest)
		env[name] = obj[i:vend]
		count++
		if i = skipSpace(obj, vend); obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return env, deepest, count
}

// memberName decodes a quoted member name as encoding/json does (escapes
// resolved, invalid UTF-8 replaced), copying only plain ASCII directly.
func memberName(quoted []byte) string {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(quoted, &s)
	return s
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index just past the string whose opening quote is
// at i: the first quote not escaped by an odd run of backslashes.
func skipString(b []byte, i int) int {
	for j := i + 1; ; {
		q := bytes.IndexByte(b[j:], '"') + j
		k := q
		for k > j && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipValue returns the index just past the value starting at i, which is
// nested at depth, raising *deepest to the deepest array or object in it.
func skipValue(b []byte, i, depth int, deepest *int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
	default: // a number, true, false or null: letters, digits, + - .
		for i < len(b) && (b[i] >= '0' || b[i] == '+' || b[i] == '-' || b[i] == '.') && b[i] != ']' && b[i] != '}' {
			i++
		}
		return i
	}
	d := depth
	for j := i; ; j++ {
		switch b[j] {
		case '"':
			j = skipString(b, j) - 1
		case '{', '[':
			d++
			*deepest = max(*deepest, d)
		case '}', ']':
			if d--; d == depth {
				return j + 1
			}
		}
	}
}
