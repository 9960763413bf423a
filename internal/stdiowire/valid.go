package stdiowire

import "bytes"

// maxValidDepth is encoding/json's nesting limit: json.Valid refuses input
// nested deeper.
const maxValidDepth = 10000

// valid reports whether b is one JSON value, exactly as json.Valid does
// (strings may hold any byte from 0x20 up, invalid UTF-8 included), in one
// pass whose inner loop over string bytes is a table look-up: encoding/json's
// state machine takes a function call per byte, which on an upload's
// megabytes of base64 was most of the check's time. FuzzValid holds it to
// json.Valid.
func valid(b []byte) bool {
	var stack []byte // the open '{' and '['
	i, needValue := 0, true
	for {
		i = skipSpace(b, i)
		if needValue {
			if i >= len(b) {
				return false
			}
			if c := b[i]; c == '{' || c == '[' {
				if len(stack) >= maxValidDepth {
					return false
				}
				if i = skipSpace(b, i+1); i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
					i, needValue = i+1, false
					continue
				}
				if stack = append(stack, c); c == '{' {
					i = validName(b, i)
				}
			} else {
				i, needValue = validScalar(b, i), false
			}
			if i < 0 {
				return false
			}
			continue
		}
		if len(stack) == 0 {
			return i == len(b)
		}
		if i >= len(b) {
			return false
		}
		switch top := stack[len(stack)-1]; b[i] {
		case ',':
			if i, needValue = i+1, true; top == '{' {
				if i = validName(b, skipSpace(b, i)); i < 0 {
					return false
				}
			}
		case top + 2:
			i, stack = i+1, stack[:len(stack)-1]
		default:
			return false
		}
	}
}

// validName checks a member name and its colon at b[i:] and returns the
// index past the colon, or -1.
func validName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return i + 1
}

// validScalar checks the string, number or literal at b[i:] and returns the
// index past it, or -1.
func validScalar(b []byte, i int) int {
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit)
		}
	}
	return -1
}

// plain marks the bytes a JSON string holds as they are: not a control
// character, quote or backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString checks the string whose opening quote is at b[i] and returns
// the index past its closing quote, or -1.
func validString(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		if plain[b[j]] {
			j++
			continue
		}
		switch {
		case b[j] == '"':
			return j + 1
		case b[j] != '\\' || j+1 >= len(b):
			return -1
		case bytes.IndexByte([]byte(`"\/bfnrt`), b[j+1]) >= 0:
			j += 2
		case b[j+1] == 'u' && j+6 <= len(b) && isHex(b[j+2:j+6]):
			j += 6
		default:
			return -1
		}
	}
	return -1
}

func isHex(s []byte) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// validNumber checks the number at b[i:] (JSON's grammar: no leading zeros,
// a fraction and an exponent each with digits) and returns the index past
// it, or -1.
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the index past the run of decimal digits at b[i:].
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
