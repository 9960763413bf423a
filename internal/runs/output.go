package runs

import "unicode/utf8"

// ChunkMax is the most bytes of each stream one read returns, so an
// answer stays small whatever the program printed; the next offset says
// where to go on.
const ChunkMax = 16 << 10

// stream is one output stream of a run as far as it is kept: its first max
// bytes; what comes after is only counted. Offsets are byte offsets from
// the stream's start. Its owner (run) locks it.
type stream struct {
	buf     []byte
	max     int64
	dropped int64
}

// write keeps what fits of p and counts the rest.
func (s *stream) write(p []byte) {
	room := s.max - int64(len(s.buf))
	if int64(len(p)) > room {
		s.dropped += int64(len(p)) - max(room, 0)
		p = p[:max(room, 0)]
	}
	s.buf = append(s.buf, p...)
}

// size is how many bytes are kept.
func (s *stream) size() int64 { return int64(len(s.buf)) }

// read returns the kept bytes from off, at most ChunkMax, and the offset
// that follows them (see cut).
func (s *stream) read(off int64, final bool) (string, int64) {
	return chunk(s.buf, off, final)
}

// chunk is what a read of data from off returns: at most ChunkMax bytes,
// cut before a character that is not whole in the answer (it would not
// survive JSON), unless data is final and ends with it (then it never will
// be). An offset past the end reads nothing and stays where the data ends.
func chunk(data []byte, off int64, final bool) (string, int64) {
	n := int64(len(data))
	if off < 0 {
		off = 0
	}
	if off >= n {
		return "", n
	}
	end := min(n, off+ChunkMax)
	if end < n || !final {
		end = off + wholeRunes(data[off:end])
	}
	return string(data[off:end]), end
}

// wholeRunes is len(p) without a last character that is cut short (it
// may still be completed by what follows), so the next read starts on its
// first byte.
func wholeRunes(p []byte) int64 {
	n := len(p)
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return int64(i)
			}
			break
		}
	}
	return int64(n)
}
