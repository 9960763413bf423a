package runs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChunk(t *testing.T) {
	e := "é" // two bytes
	long := strings.Repeat("a", ChunkMax-1) + e + "tail"
	tests := []struct {
		name  string
		data  string
		off   int64
		final bool
		want  string
		next  int64
	}{
		{"empty", "", 0, false, "", 0},
		{"all of it", "abc", 0, false, "abc", 3},
		{"from an offset", "abc", 1, true, "bc", 3},
		{"offset past the end stays at the end", "abc", 99, false, "", 3},
		{"negative offset reads from 0", "abc", -4, false, "abc", 3},
		{"bounded by ChunkMax, cut before a split character", long, 0, false, strings.Repeat("a", ChunkMax-1), ChunkMax - 1},
		{"the split character comes whole next", long, ChunkMax - 1, false, e + "tail", int64(len(long))},
		{"a character still being written waits", "ab\xc3", 0, false, "ab", 2},
		{"it alone waits too", "ab\xc3", 2, false, "", 2},
		{"a final cut-short character is returned as is", "ab\xc3", 0, true, "ab\xc3", 3},
		{"invalid bytes are not held back", "ab\xff", 0, false, "ab\xff", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := chunk([]byte(tt.data), tt.off, tt.final)
			if diff := cmp.Diff([]any{tt.want, tt.next}, []any{got, next}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestChunksJoin reads a text of multi-byte characters written in pieces
// that split them, by offsets, and gets it back whole.
func TestChunksJoin(t *testing.T) {
	text := strings.Repeat("a€ü😀", 20000)
	s := stream{max: 1 << 30}
	var got strings.Builder
	off := int64(0)
	for i := 0; i < len(text); i += 7 {
		s.write([]byte(text[i:min(i+7, len(text))]))
		for {
			part, next := s.read(off, false)
			got.WriteString(part)
			if next == off {
				break
			}
			off = next
		}
	}
	part, _ := s.read(off, true)
	got.WriteString(part)
	if got.String() != text {
		t.Errorf("joined %d bytes, want %d", got.Len(), len(text))
	}
}

func TestStreamKeepsMax(t *testing.T) {
	s := stream{max: 5}
	s.write([]byte("abc"))
	s.write([]byte("defg"))
	s.write([]byte("h"))
	if diff := cmp.Diff([]any{"abcde", int64(3)}, []any{string(s.buf), s.dropped}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
