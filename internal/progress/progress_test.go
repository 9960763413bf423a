package progress

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder collects what a Stream sends, with the time of each send.
type recorder struct {
	mu   sync.Mutex
	msgs []string
	seqs []int
	at   []time.Time
}

func (r *recorder) send(seq int, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs, r.seqs, r.at = append(r.msgs, msg), append(r.seqs, seq), append(r.at, time.Now())
}

func TestStreamContent(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		chunks []string
		want   string // all messages concatenated
	}{
		{"in order", Options{}, []string{"a\n", "b\n", "c\n"}, "a\nb\nc\n"},
		{"message bound drops and counts", Options{MaxMessage: 10}, []string{"0123456789abcdef"}, "0123456789\n[... 6 bytes not streamed ...]\n"},
		{"total cap", Options{MaxTotal: 4}, []string{"abcdefgh"}, "abcd\n[progress output stops here: 4 bytes streamed; the result carries the output]\n"},
		{"split rune kept whole", Options{}, []string{"caf\xc3", "\xa9!"}, "café!"},
		{"nothing written sends nothing", Options{}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			s := New(tt.opts, r.send)
			for _, c := range tt.chunks {
				s.Observe("stdout", []byte(c))
			}
			s.Close()
			if d := cmp.Diff(tt.want, strings.Join(r.msgs, "")); d != "" {
				t.Errorf("streamed text (-want +got):\n%s", d)
			}
			for i, seq := range r.seqs {
				if seq != i+1 {
					t.Errorf("seq %d at message %d", seq, i)
				}
			}
		})
	}
}

// TestStreamRate writes far faster than the interval: messages coalesce and
// consecutive sends are never closer than the interval.
func TestStreamRate(t *testing.T) {
	const interval = 20 * time.Millisecond
	r := &recorder{}
	s := New(Options{Interval: interval}, r.send)
	var want strings.Builder
	for i := range 100 {
		line := strings.Repeat("x", i%7) + "\n"
		want.WriteString(line)
		s.Observe("stdout", []byte(line))
		time.Sleep(time.Millisecond)
	}
	s.Close()
	if got := strings.Join(r.msgs, ""); got != want.String() {
		t.Errorf("coalesced text differs from what was written")
	}
	if len(r.msgs) >= 100 {
		t.Errorf("%d messages for 100 writes: nothing was coalesced", len(r.msgs))
	}
	for i := 1; i < len(r.at); i++ {
		if gap := r.at[i].Sub(r.at[i-1]); gap < interval {
			t.Errorf("messages %d and %d only %v apart (interval %v)", i-1, i, gap, interval)
		}
	}
}
