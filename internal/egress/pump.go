package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// pumpChunk is how many bytes a tunnel moves between two checks of the
// run's limits: the kernel moves them (splice), the proxy counts them.
// A run can pass its byte limit by at most one chunk per direction.
const pumpChunk = 1 << 20

// pump copies a tunnel's bytes from src to dst until src ends, either
// side fails, the flow goes idle or the run reaches its byte limit. When
// both are TCP connections the kernel moves the bytes (net.TCPConn's
// ReadFrom splices from another TCP connection), one chunk at a time;
// otherwise it falls back to a counted io.Copy. sent says the direction:
// true for the program's bytes going out.
func (f *flow) pump(dst, src net.Conn, sent bool) error {
	rdst, ok1 := tcpOf(dst)
	rsrc, ok2 := tcpOf(src)
	if !ok1 || !ok2 {
		return f.copyCounted(dst, src, sent)
	}
	for {
		by := time.Now().Add(f.b.limits.IdleTimeout)
		_ = rsrc.SetReadDeadline(by)
		_ = rdst.SetWriteDeadline(by)
		n, err := rdst.ReadFrom(&io.LimitedReader{R: rsrc, N: pumpChunk})
		if n > 0 {
			f.touch()
			if !f.addDir(sent, n) {
				return errLimit
			}
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && !f.idle():
			continue // the other direction is busy: not idle
		case err != nil:
			return err
		case n == 0:
			return nil // src ended
		}
	}
}

// copyCounted is pump for connections the kernel cannot splice between.
func (f *flow) copyCounted(dst, src net.Conn, sent bool) error {
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(f.b.limits.IdleTimeout))
		n, err := src.Read(buf)
		if n > 0 {
			f.touch()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			if !f.addDir(sent, int64(n)) {
				return errLimit
			}
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && !f.idle():
			continue
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}

// addDir counts n bytes in one direction; false past the byte limit.
func (f *flow) addDir(sent bool, n int64) bool {
	if sent {
		return f.add(n, 0)
	}
	return f.add(0, n)
}

// tcpOf is the TCP connection under c (an upstream's wrapper), if any.
func tcpOf(c net.Conn) (*net.TCPConn, bool) {
	if u, ok := c.(*upstreamConn); ok {
		c = u.Conn
	}
	t, ok := c.(*net.TCPConn)
	return t, ok
}
