package tool

import (
	"fmt"
	"math"
	"strconv"
)

// Int is an integer argument whose out-of-range values reach the handler
// instead of being refused by the decoder: Int saturates at the int64
// bounds, so the handler's range check answers in the tool's own words
// ("timeout_ms must be between 1 and 300000, got …") for a timeout of any
// size. A plain int argument beyond its type is refused by Add's decoding
// (args.go) with the type's range. Its schema is an integer's.
type Int int

// UnmarshalJSON decodes a JSON integer, saturating beyond int64 and
// accepting an integral number in exponent form (1e3).
func (i *Int) UnmarshalJSON(b []byte) error {
	s := string(b)
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		*i = Int(n)
		return nil
	}
	if e, ok := err.(*strconv.NumError); ok && e.Err == strconv.ErrRange {
		*i = Int(math.MaxInt64)
		if len(s) > 0 && s[0] == '-' {
			*i = Int(math.MinInt64)
		}
		return nil
	}
	f, ferr := strconv.ParseFloat(s, 64)
	if ferr != nil || f != math.Trunc(f) {
		return fmt.Errorf("%s is not an integer", s)
	}
	switch {
	case f >= math.MaxInt64:
		*i = Int(math.MaxInt64)
	case f <= math.MinInt64:
		*i = Int(math.MinInt64)
	default:
		*i = Int(f)
	}
	return nil
}

// IntPtr returns p's value as a *int (nil for nil).
func IntPtr(p *Int) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}
