// Package output captures a program's output stream in bounded memory and
// renders it with head+tail truncation:
//
//	first HEAD chars + "\n\n[... truncated N characters ...]\n\n" + last TAIL chars
//
// where N is the true number of characters left out. Characters are Unicode
// code points; invalid UTF-8 bytes count as one character each (rendered as
// U+FFFD). A Sink holds at most Max+Tail characters however much is written.
package output

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// Limits are the truncation settings. Head+Tail must not exceed Max.
type Limits struct {
	Max, Head, Tail int
}

// Observer receives a program's output as it is written, for streaming
// (progress notifications): stream is "stdout" or "stderr" (installers
// report their combined output as "stdout"). Chunks arrive in write order;
// an Observer must be quick and must not retain p. A nil Observer observes
// nothing.
type Observer func(stream string, p []byte)

// For returns a per-stream observe function for NewSink (nil when o is nil).
func (o Observer) For(stream string) func([]byte) {
	if o == nil {
		return nil
	}
	return func(p []byte) { o(stream, p) }
}

// Sink is an io.Writer that keeps the first Max characters and a ring of the
// last Tail characters. The zero value is not usable; use NewSink. Writes and
// reads may happen from different goroutines.
type Sink struct {
	mu      sync.Mutex
	lim     Limits
	head    []rune
	ring    []rune
	ringPos int
	total   int64
	bytes   int64
	partial []byte
	observe func([]byte)
}

// NewSink returns a Sink with the given limits. observe, if non-nil, is called
// with every chunk as it is written (for streaming); it must not retain p.
func NewSink(lim Limits, observe func(p []byte)) *Sink {
	return &Sink{lim: lim, observe: observe}
}

// Write records p; it never fails.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.observe != nil {
		s.observe(p)
	}
	s.bytes += int64(len(p))
	data := p
	if len(s.partial) > 0 {
		data = append(s.partial, p...)
		s.partial = nil
	}
	data, s.partial = splitPartial(data)
	for len(data) > 0 && len(s.head) < s.lim.Max {
		r, size := utf8.DecodeRune(data)
		s.add(r)
		data = data[size:]
	}
	if len(data) > 0 {
		s.addBulk(data)
	}
	return len(p), nil
}

// splitPartial separates an incomplete UTF-8 sequence at the end of data
// (kept for the next write) from the complete part.
func splitPartial(data []byte) (complete, partial []byte) {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return data[:i], append([]byte(nil), data[i:]...)
			}
			break
		}
	}
	return data, nil
}

// addBulk handles data once the head is full: only the count and the last
// Tail characters matter, so the chunk is counted in bulk and only its end
// is decoded. This keeps a 1 GB stream cheap.
func (s *Sink) addBulk(data []byte) {
	n := utf8.RuneCount(data)
	keep := min(n, s.lim.Tail)
	start := len(data)
	for i := 0; i < keep; i++ {
		_, size := utf8.DecodeLastRune(data[:start])
		start -= size
	}
	s.total += int64(n - keep)
	for rest := data[start:]; len(rest) > 0; {
		r, size := utf8.DecodeRune(rest)
		s.add(r)
		rest = rest[size:]
	}
}

func (s *Sink) add(r rune) {
	s.total++
	if len(s.head) < s.lim.Max {
		s.head = append(s.head, r)
	}
	if s.lim.Tail == 0 {
		return
	}
	if len(s.ring) < s.lim.Tail {
		s.ring = append(s.ring, r)
		return
	}
	s.ring[s.ringPos] = r
	s.ringPos = (s.ringPos + 1) % s.lim.Tail
}

// Result renders the captured text and reports whether it was truncated.
func (s *Sink) Result() (text string, truncated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.total
	if len(s.partial) > 0 {
		total += int64(len(s.partial))
	}
	if total <= int64(s.lim.Max) {
		return string(s.head) + strings.Repeat(string(utf8.RuneError), len(s.partial)), false
	}
	omitted := total - int64(s.lim.Head) - int64(s.lim.Tail)
	var b strings.Builder
	b.WriteString(string(s.head[:s.lim.Head]))
	fmt.Fprintf(&b, "\n\n[... truncated %d characters ...]\n\n", omitted)
	b.WriteString(s.tail())
	return b.String(), true
}

// tail returns the last Tail characters in order (partial bytes excluded:
// they can only be a broken final character).
func (s *Sink) tail() string {
	if len(s.ring) < s.lim.Tail || s.ringPos == 0 {
		return string(s.ring)
	}
	return string(s.ring[s.ringPos:]) + string(s.ring[:s.ringPos])
}

// Bytes is the number of bytes written so far.
func (s *Sink) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Truncate applies the same head+tail rule to a string already in memory.
func Truncate(text string, lim Limits) (string, bool) {
	s := NewSink(lim, nil)
	_, _ = s.Write([]byte(text))
	return s.Result()
}
