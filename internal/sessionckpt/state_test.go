package sessionckpt

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/checkpoint"
)

// TestStateZeroAndReports: the zero State has no checkpoint; a set
// checkpoint is unchanged until the session runs again; a resume report
// is given once.
func TestStateZeroAndReports(t *testing.T) {
	var st State
	if st.Current() != nil || st.Bytes() != 0 || st.unchanged(0) || st.TakeResumed() != nil {
		t.Fatalf("zero State is not empty: %+v", st.Current())
	}
	st.stopAuto() // no timer: nothing to stop
	st.set(&checkpoint.Record{ID: "s", Bytes: 42}, 3)
	tests := []struct {
		execs int
		want  bool
	}{{3, true}, {4, false}, {2, false}}
	for _, tc := range tests {
		if got := st.unchanged(tc.execs); got != tc.want {
			t.Errorf("unchanged(%d) = %v, want %v", tc.execs, got, tc.want)
		}
	}
	if st.Bytes() != 42 {
		t.Errorf("Bytes() = %d, want 42", st.Bytes())
	}
	r := &Resumed{AgeS: 1.5, Auto: true}
	st.resume(r)
	if got := st.TakeResumed(); got != r {
		t.Errorf("TakeResumed() = %+v, want %+v", got, r)
	}
	if got := st.TakeResumed(); got != nil {
		t.Errorf("second TakeResumed() = %+v, want nil", got)
	}
}

func TestOptionsDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Options
		want Options
	}{
		{"zero", Options{}, Options{MaxBytes: 64 << 20, MaxTotal: 1 << 30, AutoMaxCost: time.Second, MaxFork: 10, Timeout: time.Minute}},
		{"set", Options{MaxBytes: 1, MaxTotal: 2, AutoMaxCost: 3, MaxFork: 4, Timeout: 5, Auto: 6, Spares: 7},
			Options{MaxBytes: 1, MaxTotal: 2, AutoMaxCost: 3, MaxFork: 4, Timeout: 5, Auto: 6, Spares: 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.withDefaults()); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgeS(t *testing.T) {
	if got := AgeS(time.Now().Add(-1500 * time.Millisecond)); got != 1.5 {
		t.Errorf("AgeS(1.5 s ago) = %v, want 1.5", got)
	}
}
