package output

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTruncate(t *testing.T) {
	lim := Limits{Max: 10, Head: 4, Tail: 3}
	cases := []struct {
		name, in, want string
		truncated      bool
	}{
		{"empty", "", "", false},
		{"exactly max", "0123456789", "0123456789", false},
		{"one over", "0123456789A", "0123\n\n[... truncated 4 characters ...]\n\n89A", true},
		{"long", strings.Repeat("x", 100) + "END", "xxxx\n\n[... truncated 96 characters ...]\n\nEND", true},
		{"runes not bytes", "ééééééééééé", "éééé\n\n[... truncated 4 characters ...]\n\nééé", true},
		{"multibyte within max", "日本語テキスト", "日本語テキスト", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, tr := Truncate(c.in, lim)
			if diff := cmp.Diff(c.want, got); diff != "" || tr != c.truncated {
				t.Errorf("truncated=%v want %v; (-want +got):\n%s", tr, c.truncated, diff)
			}
		})
	}
}

// TestSinkChunkBoundaries writes a multibyte stream in every chunk size and
// expects the same result as writing it at once.
func TestSinkChunkBoundaries(t *testing.T) {
	lim := Limits{Max: 50, Head: 20, Tail: 20}
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "%d€界", i)
	}
	in := b.String()
	want, _ := Truncate(in, lim)
	for size := 1; size <= 9; size++ {
		s := NewSink(lim, nil)
		for i := 0; i < len(in); i += size {
			_, _ = s.Write([]byte(in[i:min(i+size, len(in))]))
		}
		got, tr := s.Result()
		if !tr || got != want {
			t.Fatalf("chunk size %d: got %q want %q", size, got, want)
		}
	}
}

func TestSinkMarkerCountsTrueTotal(t *testing.T) {
	lim := Limits{Max: 10000, Head: 4000, Tail: 4000}
	s := NewSink(lim, nil)
	line := []byte(strings.Repeat("y", 1023) + "\n")
	for i := 0; i < 4096; i++ {
		_, _ = s.Write(line)
	}
	got, tr := s.Result()
	want := fmt.Sprintf("[... truncated %d characters ...]", 4096*1024-8000)
	if !tr || !strings.Contains(got, want) || s.Bytes() != 4096*1024 {
		t.Fatalf("marker %q missing or bytes %d", want, s.Bytes())
	}
	if n := len([]rune(got)); n != 8000+len([]rune("\n\n"+want+"\n\n")) {
		t.Errorf("rendered %d characters", n)
	}
}

func TestSinkObserver(t *testing.T) {
	var seen []string
	s := NewSink(Limits{Max: 5, Head: 2, Tail: 2}, func(p []byte) { seen = append(seen, string(p)) })
	_, _ = s.Write([]byte("ab"))
	_, _ = s.Write([]byte("cd"))
	if diff := cmp.Diff([]string{"ab", "cd"}, seen); diff != "" {
		t.Error(diff)
	}
}

func BenchmarkSinkBulk(b *testing.B) {
	chunk := []byte(strings.Repeat("x", 32<<10))
	s := NewSink(Limits{Max: 10000, Head: 4000, Tail: 4000}, nil)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = s.Write(chunk)
	}
}
