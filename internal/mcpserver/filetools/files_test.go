package filetools

import "testing"

func TestTrimPartialRune(t *testing.T) {
	s := []byte("aé€") // é is 2 bytes, € is 3
	for cut, want := range map[int]string{1: "a", 2: "a", 3: "aé", 4: "aé", 5: "aé", 6: "aé€"} {
		if got := string(trimPartialRune(s[:cut])); got != want {
			t.Errorf("cut %d: %q, want %q", cut, got, want)
		}
	}
}
