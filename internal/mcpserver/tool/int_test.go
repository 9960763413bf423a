package tool

import (
	"encoding/json"
	"math"
	"testing"
)

func TestIntDecodes(t *testing.T) {
	cases := []struct {
		in      string
		want    Int
		wantErr bool
	}{
		{"1000", 1000, false},
		{"-5", -5, false},
		{"9223372036854775807", math.MaxInt64, false},
		{"9223372036854775808", math.MaxInt64, false}, // what a float64 round trip of MaxInt64 gives
		{"-9223372036854775809", math.MinInt64, false},
		{"1e3", 1000, false},
		{"1e30", math.MaxInt64, false},
		{"1.5", 0, true},
		{`"7"`, 0, true},
	}
	for _, c := range cases {
		var got Int
		err := json.Unmarshal([]byte(c.in), &got)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}
