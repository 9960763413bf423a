package session

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDemuxSplitsFramesAtAnyChunking feeds the same stream in every chunk
// size: user output must reach the sink intact and frames must be decoded,
// even when the mark is split across writes.
func TestDemuxSplitsFramesAtAnyChunking(t *testing.T) {
	const mark = "\x1e\x1fcodexec-abc:"
	stream := "hello\nwor" + mark + `{"id":1,"ok":true}` + "\nld: \x1e almost a mark\n" + mark + `{"id":2,"end":true}` + "\ntail"
	for size := 1; size <= len(stream); size++ {
		var out strings.Builder
		var frames []reply
		d := newDemux(mark, func(r reply) { frames = append(frames, r) })
		d.setSink(&out)
		for i := 0; i < len(stream); i += size {
			_, _ = d.Write([]byte(stream[i:min(i+size, len(stream))]))
		}
		if out.String() != "hello\nworld: \x1e almost a mark\ntail" {
			t.Fatalf("chunk %d: output %q", size, out.String())
		}
		want := []reply{{ID: 1, OK: true}, {ID: 2, End: true}}
		if diff := cmp.Diff(want, frames); diff != "" {
			t.Fatalf("chunk %d: frames (-want +got):\n%s", size, diff)
		}
	}
}

func TestPartialPrefix(t *testing.T) {
	cases := []struct {
		b, mark string
		want    int
	}{
		{"abc", "xyz", 0}, {"abx", "xyz", 1}, {"axy", "xyz", 2}, {"xyzx", "xyz", 1}, {"", "xyz", 0},
	}
	for _, c := range cases {
		if got := partialPrefix([]byte(c.b), []byte(c.mark)); got != c.want {
			t.Errorf("partialPrefix(%q, %q) = %d, want %d", c.b, c.mark, got, c.want)
		}
	}
}
