package warm

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRunnerPipes is the cost of a runner's three stdio pipes, as a
// runner's start uses them (the child ends' descriptors handed over, then
// every end closed), made with pipe against os.Pipe, the baseline.
//
//	go test ./internal/sandbox/warm -run '^$' -bench RunnerPipes
func BenchmarkRunnerPipes(b *testing.B) {
	for _, c := range []struct {
		name string
		make func(toChild bool) (server, child *os.File, err error)
	}{
		{"os.Pipe", func(toChild bool) (*os.File, *os.File, error) {
			r, w, err := os.Pipe()
			if toChild {
				return w, r, err
			}
			return r, w, err
		}},
		{"pipe", pipe},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, toChild := range []bool{true, false, false} {
					s, ch, err := c.make(toChild)
					if err != nil {
						b.Fatal(err)
					}
					_ = ch.Fd()
					_, _ = ch.Close(), s.Close()
				}
			}
		})
	}
}

// TestPipeEnds: the child's end blocks, the server's does not, and bytes
// go from one to the other in the direction asked for.
func TestPipeEnds(t *testing.T) {
	for _, toChild := range []bool{true, false} {
		s, ch, err := pipe(toChild)
		if err != nil {
			t.Fatal(err)
		}
		w, r := s, ch
		if !toChild {
			w, r = ch, s
		}
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatalf("toChild=%v: write: %v", toChild, err)
		}
		b := make([]byte, 1)
		if n, err := r.Read(b); n != 1 || err != nil {
			t.Fatalf("toChild=%v: read %d %v", toChild, n, err)
		}
		if nb, _ := isNonblock(ch); nb {
			t.Errorf("toChild=%v: the child's end is non-blocking", toChild)
		}
		if nb, _ := isNonblock(s); !nb {
			t.Errorf("toChild=%v: the server's end is blocking", toChild)
		}
		_, _ = s.Close(), ch.Close()
	}
}

func isNonblock(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var nb bool
	var ferr error
	err = rc.Control(func(fd uintptr) {
		var fl int
		fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0)
		nb = fl&unix.O_NONBLOCK != 0
	})
	if err == nil {
		err = ferr
	}
	return nb, err
}
