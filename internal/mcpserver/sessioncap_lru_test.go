package mcpserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeSessions stands in for the SDK's session table: the sessions the cap
// settles are live until the cap closes them.
type fakeSessions struct {
	live   map[string]bool
	closed []string
}

func (f *fakeSessions) ids() map[string]bool { return f.live }

func (f *fakeSessions) close(id string) {
	f.closed = append(f.closed, id)
	delete(f.live, id)
}

// capOp is one step of a cap test: open (arg: principal), enter or leave
// (arg: session, a request starting or ending), close (arg: session, closed
// by its client).
type capOp struct{ kind, arg string }

// TestSessionCapEvictsLeastRecentlyUsedIdle drives the cap's bookkeeping
// (admit, settle, enter, leave) on a fake clock: at the cap, the new
// session takes the place of the principal's least recently used session
// with nothing in flight; a session with a request in flight (or a stream
// open) is never closed; with all busy the new one is refused; other
// principals' sessions are never counted or closed.
func TestSessionCapEvictsLeastRecentlyUsedIdle(t *testing.T) {
	tests := []struct {
		name       string
		max        int
		ops        []capOp
		wantClosed []string
		wantRefuse int // opens refused
	}{
		{"below the cap nothing closes", 3,
			[]capOp{{"open", "a"}, {"open", "a"}, {"open", "a"}}, nil, 0},
		{"the least recently used idle goes", 2,
			[]capOp{{"open", "a"}, {"open", "a"}, {"enter", "s1"}, {"leave", "s1"}, {"open", "a"}}, []string{"s2"}, 0},
		{"a session in flight stays", 2,
			[]capOp{{"open", "a"}, {"open", "a"}, {"enter", "s1"}, {"open", "a"}}, []string{"s2"}, 0},
		{"all busy: refused", 2,
			[]capOp{{"open", "a"}, {"open", "a"}, {"enter", "s1"}, {"enter", "s2"}, {"open", "a"}}, nil, 1},
		{"a stream ended frees it", 1,
			[]capOp{{"open", "a"}, {"enter", "s1"}, {"open", "a"}, {"leave", "s1"}, {"open", "a"}}, []string{"s1"}, 1},
		{"another principal's sessions are not touched", 1,
			[]capOp{{"open", "b"}, {"open", "a"}, {"open", "a"}}, []string{"s2"}, 0},
		{"a session closed by its client frees its slot", 1,
			[]capOp{{"open", "a"}, {"enter", "s1"}, {"close", "s1"}, {"open", "a"}}, nil, 0},
		{"a crash loop of 200 opens never locks out", 8,
			loop(200), evictions(200, 8), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSessions{live: map[string]bool{}}
			clock := time.Unix(0, 0)
			c := newSessionCap(tt.max, f.ids, f.close)
			c.now = func() time.Time { clock = clock.Add(time.Second); return clock }
			refused, n := 0, 0
			for _, o := range tt.ops {
				switch o.kind {
				case "open":
					if _, ok := c.admit(o.arg); !ok {
						refused++
						continue
					}
					n++
					id := fmt.Sprintf("s%d", n)
					f.live[id] = true
					c.settle(o.arg, id)
				case "enter":
					c.enter(o.arg)
				case "leave":
					c.leave(o.arg)
				case "close":
					delete(f.live, o.arg)
				}
			}
			if diff := cmp.Diff(tt.wantClosed, f.closed); diff != "" {
				t.Errorf("closed sessions (-want +got):\n%s", diff)
			}
			if refused != tt.wantRefuse {
				t.Errorf("refused %d opens, want %d", refused, tt.wantRefuse)
			}
			if held, _ := c.heldLocked("a"); held > tt.max {
				t.Errorf("principal a holds %d sessions, over the cap %d", held, tt.max)
			}
		})
	}
}

// loop is n opens of principal a, as a client that crashes after each
// initialize.
func loop(n int) []capOp {
	var ops []capOp
	for range n {
		ops = append(ops, capOp{"open", "a"})
	}
	return ops
}

// evictions are the sessions loop(n) closes with a cap of max: the oldest
// first, every open past the cap.
func evictions(n, max int) []string {
	var out []string
	for i := 1; i <= n-max; i++ {
		out = append(out, fmt.Sprintf("s%d", i))
	}
	return out
}
