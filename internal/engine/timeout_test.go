package engine

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestResolveTimeout(t *testing.T) {
	n := func(v int) *int { return &v }
	const def, max = 30 * time.Second, 300 * time.Second
	cases := []struct {
		name    string
		ms, sec *int
		max     time.Duration
		want    time.Duration
		wantErr string // substring; "" = no error
	}{
		{name: "default", want: def},
		{name: "ms", ms: n(1500), want: 1500 * time.Millisecond},
		{name: "ms at the max", ms: n(300000), want: max},
		{name: "ms one over the max", ms: n(300001), wantErr: "timeout_ms must be between 1 and 300000 (CODEXEC_MAX_TIMEOUT_MS), got 300001"},
		{name: "ms max int64", ms: n(math.MaxInt64), wantErr: "timeout_ms must be between 1 and 300000 (CODEXEC_MAX_TIMEOUT_MS), got 9223372036854775807"},
		{name: "ms overflowing to a small duration", ms: n(math.MaxInt64/1_000_000 + 1), wantErr: "between 1 and 300000"},
		{name: "ms zero", ms: n(0), wantErr: "between 1 and 300000"},
		{name: "ms negative", ms: n(-5), wantErr: "got -5"},
		{name: "ms min int64", ms: n(math.MinInt64), wantErr: "got -9223372036854775808"},
		{name: "seconds", sec: n(7), want: 7 * time.Second},
		{name: "seconds at 300", sec: n(300), want: max},
		{name: "seconds over 300", sec: n(301), wantErr: "timeout must be between 1 and 300 seconds, got 301"},
		{name: "seconds max int64", sec: n(math.MaxInt64), wantErr: "between 1 and 300 seconds, got 9223372036854775807"},
		{name: "seconds negative", sec: n(-1), wantErr: "between 1 and 300 seconds, got -1"},
		{name: "seconds over a lowered max", sec: n(20), max: 10 * time.Second, wantErr: "timeout must be between 1 and 10 seconds (CODEXEC_MAX_TIMEOUT_MS), got 20"},
		{name: "seconds under a max below one second", sec: n(1), max: 500 * time.Millisecond, wantErr: "the server maximum is 500 ms (CODEXEC_MAX_TIMEOUT_MS); give timeout_ms"},
		{name: "both", ms: n(1), sec: n(1), wantErr: "not both"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := max
			if tc.max != 0 {
				m = tc.max
			}
			got, err := resolveTimeout(tc.ms, tc.sec, def, m)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveTimeoutUpTo: a background run's timeout is defaulted and
// capped by its own setting, which the messages name.
func TestResolveTimeoutUpTo(t *testing.T) {
	n := func(v int) *int { return &v }
	e := &Engine{opts: Options{DefaultTimeout: time.Second, MaxTimeout: 5 * time.Second}}
	const limit = time.Hour
	for _, tc := range []struct {
		ms, sec *int
		want    time.Duration
		wantErr string
	}{
		{want: limit},
		{ms: n(3_600_000), want: limit},
		{ms: n(3_600_001), wantErr: "timeout_ms must be between 1 and 3600000 (CODEXEC_BACKGROUND_MAX_TIMEOUT_MS), got 3600001"},
		{sec: n(300), want: 300 * time.Second},
	} {
		got, err := e.ResolveTimeoutUpTo(tc.ms, tc.sec, limit, limit, "CODEXEC_BACKGROUND_MAX_TIMEOUT_MS")
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%v %v: got %v, %v; want %q", tc.ms, tc.sec, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v %v: got %v, %v; want %v", tc.ms, tc.sec, got, err, tc.want)
		}
	}
}
