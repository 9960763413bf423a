package sandbox

import "testing"

// TestSize: sizes read as people write them, whole units first.
func TestSize(t *testing.T) {
	cases := []struct {
		bytes int64
		want  string
	}{
		{1 << 30, "1 GiB"}, {256 << 20, "256 MiB"}, {1536 << 20, "1536 MiB"}, {64 << 10, "64 KiB"},
		{3<<20 + 100, "3.0 MiB"}, {100, "100 B"},
	}
	for _, c := range cases {
		if got := Size(c.bytes); got != c.want {
			t.Errorf("Size(%d) = %q, want %q", c.bytes, got, c.want)
		}
	}
}

// TestMechanism: a limit of zero is held by nothing.
func TestMechanism(t *testing.T) {
	if got := Mechanism(0, EnforcedCgroup); got != EnforcedNone {
		t.Errorf("Mechanism(0) = %q, want none", got)
	}
	if got := Mechanism(0.5, EnforcedCgroup); got != EnforcedCgroup {
		t.Errorf("Mechanism(0.5) = %q, want cgroup", got)
	}
}

// TestEnforcedByNonEnforcer: a backend that does not say gets no answer.
func TestEnforcedByNonEnforcer(t *testing.T) {
	if e, ok := EnforcedBy(Unavailable{}, Spec{}); ok {
		t.Errorf("EnforcedBy(Unavailable) = %+v, true; want false", e)
	}
}
