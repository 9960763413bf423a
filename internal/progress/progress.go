// Package progress turns a running program's output into a bounded, ordered
// stream of progress messages: output chunks are coalesced and sent at most
// once per Interval, one message carries at most MaxMessage bytes (what does
// not fit in one interval is dropped and counted in the text), and at most
// MaxTotal bytes are streamed per call; the final result still carries the
// full (truncated-by-policy) output. It knows nothing of MCP: the caller's
// send function delivers each message (mcpserver sends
// notifications/progress). Messages are sent from one goroutine, in order.
package progress

import (
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
)

// Options bound a Stream. Zero fields take the Defaults' values.
type Options struct {
	Interval   time.Duration
	MaxMessage int
	MaxTotal   int
}

// Defaults: at most 10 messages per second, 8 KiB each, 1 MiB per call.
var Defaults = Options{Interval: 100 * time.Millisecond, MaxMessage: 8 << 10, MaxTotal: 1 << 20}

// Stream coalesces output for one call. Create it with New; Observe may be
// called from any goroutine; Close must be called once when the run ends.
type Stream struct {
	opts Options
	send func(seq int, msg string)

	mu      sync.Mutex
	buf     []byte
	skipped int64
	sent    int
	capped  bool

	wake    chan struct{}
	closing chan struct{}
	done    chan struct{}
	count   int // messages sent; owned by the loop goroutine
}

// New starts a Stream that delivers messages through send; seq counts the
// messages from 1.
func New(opts Options, send func(seq int, msg string)) *Stream {
	if opts.Interval <= 0 {
		opts.Interval = Defaults.Interval
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = Defaults.MaxMessage
	}
	if opts.MaxTotal <= 0 {
		opts.MaxTotal = Defaults.MaxTotal
	}
	s := &Stream{opts: opts, send: send, wake: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// Observe records a chunk of output (the stream name is not shown: stdout
// and stderr interleave in arrival order). It has output.Observer's
// signature and never blocks on sending.
func (s *Stream) Observe(_ string, p []byte) {
	s.mu.Lock()
	if s.capped {
		s.mu.Unlock()
		return
	}
	room := s.opts.MaxMessage - len(s.buf)
	if len(p) > room {
		s.skipped += int64(len(p) - room)
		p = p[:max(room, 0)]
	}
	s.buf = append(s.buf, p...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close sends what is still buffered (after the rest of the current
// interval, keeping the rate bound) and returns once every message is out.
func (s *Stream) Close() {
	close(s.closing)
	<-s.done
}

func (s *Stream) loop() {
	defer close(s.done)
	var last time.Time
	for {
		closing := false
		select {
		case <-s.wake:
		case <-s.closing:
			closing = true
		}
		if wait := s.opts.Interval - time.Since(last); wait > 0 && s.pending() {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.closing:
				<-t.C // the last message still keeps the rate bound
				closing = true
			}
		}
		if s.flush() {
			last = time.Now()
		}
		if closing {
			return
		}
	}
}

func (s *Stream) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf) > 0 || s.skipped > 0
}

// flush sends the buffered text as one message; it reports whether it sent.
func (s *Stream) flush() bool {
	s.mu.Lock()
	msg, skipped := s.take()
	if msg == "" && skipped == 0 {
		s.mu.Unlock()
		return false
	}
	if left := s.opts.MaxTotal - s.sent; len(msg) >= left {
		msg = validPrefix(msg, left) + fmt.Sprintf("\n[progress output stops here: %d bytes streamed; the result carries the output]\n", s.opts.MaxTotal)
		s.capped = true
	} else if skipped > 0 {
		msg += fmt.Sprintf("\n[... %d bytes not streamed ...]\n", skipped)
	}
	s.sent += len(msg)
	s.mu.Unlock()
	s.seqSend(msg)
	return true
}

// take empties the buffer, keeping an incomplete UTF-8 sequence at its end
// for the next message. s.mu must be held.
func (s *Stream) take() (string, int64) {
	n := len(s.buf)
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s.buf[i]) {
			if !utf8.FullRune(s.buf[i:]) {
				n = i
			}
			break
		}
	}
	msg := string(s.buf[:n])
	s.buf = append(s.buf[:0], s.buf[n:]...)
	skipped := s.skipped
	s.skipped = 0
	return msg, skipped
}

// seqSend delivers one message; only the loop goroutine calls it.
func (s *Stream) seqSend(msg string) {
	s.count++
	s.send(s.count, msg)
}

// validPrefix returns at most n bytes of s, cut on a character boundary.
func validPrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
