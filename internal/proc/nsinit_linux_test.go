//go:build linux

package proc

import "testing"

func TestStatusMask(t *testing.T) {
	status := []byte("Name:\tpython3\nSigQ:\t0/7\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000001001000\nSigCgt:\t0000000180000002\n")
	cases := []struct {
		field string
		want  uint64
		ok    bool
	}{
		{"SigBlk:", 0, true},
		{"SigIgn:", 0x1001000, true},
		{"SigCgt:", 0x180000002, true},
		{"SigXyz:", 0, false},
	}
	for _, c := range cases {
		got, ok := statusMask(status, c.field)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %#x %v, want %#x %v", c.field, got, ok, c.want, c.ok)
		}
	}
}
