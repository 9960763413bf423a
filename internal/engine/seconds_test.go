package engine

import (
	"testing"
	"time"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{
		{0, 0},
		{200 * time.Microsecond, 0.001},
		{7905494 * time.Nanosecond, 0.008},
		{1500 * time.Millisecond, 1.5},
		{1006593181 * time.Nanosecond, 1.007},
	} {
		if got := Seconds(tc.d); got != tc.want {
			t.Errorf("Seconds(%v) = %v, want %v", tc.d, got, tc.want)
		}
	}
}
