// Package stdiowire is the wire of MCP's stdio transport: newline-delimited
// JSON-RPC between the client and the SDK's server, with every message
// checked before the SDK reads it, served to the SDK as an mcp.Transport of
// its own (Stream.Transport) that decodes each checked line once.
//
// The go-sdk's stdio connection ends the session, and so the server, at the
// first line it cannot decode (not JSON, a batch, a member of the wrong
// type, trailing bytes, nesting past its limit, a line past its cap), and it
// reads numeric ids through a float64, so an id too large for that comes
// back as a different number. A Stream sits in front of it: a line the SDK
// takes unchanged is passed on (trimmed of surrounding whitespace); any
// other is answered on the output with the JSON-RPC error the specification
// names (-32700 Parse error, -32600 Invalid Request, id null when it cannot
// be known) and never reaches the SDK, which goes on serving the next line.
// Lines longer than the cap are answered and skipped without being held in
// memory. Replies and the SDK's own writes go out whole, one at a time.
//
// Framing follows the MCP stdio transport: one message per line, no
// embedded newlines; blank lines are ignored.
package stdiowire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLineBytes is the cap on one message line when Options leave it
// zero (the SDK's own default).
const DefaultMaxLineBytes = mcp.DefaultMaxLineLength

// readChunk is how much of a line is read at a time; a line longer than
// the cap is skipped in chunks of this size.
const readChunk = 64 << 10

// Options configure a Stream.
type Options struct {
	// MaxLineBytes caps one message line, line ending excluded; a longer
	// line is answered with -32600 and skipped. 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// Logger receives one warning per refused line; nil logs nothing.
	Logger *slog.Logger
	// InputEnded, when set, is called once when the input ends (or fails),
	// before Read reports that to the SDK: the SDK writes no response once
	// its reader has ended, so this is where calls still running are
	// answered. Read waits for it to return.
	InputEnded func()
	// Delivered, when set, is called with every message the transport's
	// connection is about to hand to the SDK, on the goroutine that later
	// calls InputEnded (so InputEnded sees every message read before it).
	Delivered func(jsonrpc.Message)
}

// Stream checks the lines read from in and answers the bad ones on out. Read
// yields only lines the SDK can take; Write sends the SDK's messages to out.
// Read must not be called concurrently with itself; Write may be called
// from any goroutine, and is serialised with the replies Read sends.
type Stream struct {
	in     *bufio.Reader
	closer io.Closer // in, when it can be closed
	max    int
	log    *slog.Logger
	ended  func() // Options.InputEnded, nil once called
	// delivered is Options.Delivered (may be nil).
	delivered func(jsonrpc.Message)

	wmu sync.Mutex // one write to out at a time: a reply or an SDK message
	out io.Writer

	line    []byte  // the line being read, reused
	pending []byte  // checked bytes Read has not yet returned
	decoded decoded // what the pending line decodes to (nextMessage)
	err     error   // the input's error, returned once pending is drained

	closeOnce sync.Once
	closeErr  error
}

// New returns a Stream reading messages from in and writing to out.
// Closing the Stream closes in when it is an io.Closer (not out).
func New(in io.Reader, out io.Writer, o Options) *Stream {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	s := &Stream{in: bufio.NewReaderSize(in, readChunk), max: o.MaxLineBytes, log: o.Logger, out: out, ended: o.InputEnded, delivered: o.Delivered}
	s.closer, _ = in.(io.Closer)
	return s
}

// Read returns checked message lines, each ending in a newline, answering
// and dropping the others; at the end of the input it calls
// Options.InputEnded (once) and returns the input's error.
func (s *Stream) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.err != nil {
			if ended := s.ended; ended != nil {
				s.ended = nil
				ended()
			}
			return 0, s.err
		}
		s.next()
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// Write sends one whole message of the SDK to out.
func (s *Stream) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.out.Write(p)
}

// Close closes the input (once), which ends a Read waiting on it where the
// input supports that.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		if s.closer != nil {
			s.closeErr = s.closer.Close()
		}
	})
	return s.closeErr
}

// next reads one line and either queues it for Read or answers it. A last
// line without a newline is taken as a line too.
func (s *Stream) next() {
	line, err := s.readLine()
	if msg := bytes.TrimSpace(line); len(msg) > 0 {
		if r, d := check(msg); r != nil {
			s.refuse(r)
		} else {
			s.pending, s.decoded = append(msg, '\n'), d
		}
	}
	s.err = err
}

// readLine returns the next line without its newline, and the input's
// error if the line ended with the input. A line over the cap is answered
// and skipped as it streams by; readLine then returns it empty.
func (s *Stream) readLine() ([]byte, error) {
	s.line = s.line[:0]
	tooLong := false
	for {
		chunk, err := s.in.ReadSlice('\n')
		body := bytes.TrimSuffix(chunk, []byte("\n"))
		if !tooLong && len(s.line)+len(body) > s.max {
			tooLong, s.line = true, s.line[:0]
			s.refuse(invalid(null, "the message is longer than this server's limit of %d bytes; it was skipped", s.max))
		}
		if !tooLong {
			s.line = append(s.line, body...)
		}
		if err != bufio.ErrBufferFull {
			return s.line, err
		}
	}
}

// refuse answers a refused line and logs it.
func (s *Stream) refuse(r *refusal) {
	if s.log != nil {
		s.log.Warn("refused a malformed stdio message", "code", r.code, "reason", clip(r.reason))
	}
	reply := append(r.reply(), '\n')
	if _, err := s.Write(reply); err != nil && s.log != nil {
		s.log.Warn("could not answer a malformed stdio message", "err", fmt.Sprint(err))
	}
}
