// Package frame carries JSON messages over a sandboxed program's stdio next
// to its ordinary output, for the two conversations codexec has with a
// program it runs: a session's interpreter driver (package session) and a
// code-mode program calling upstream tools (package codemode).
//
// The wire, in both directions:
//
//	host ──program stdin──▶ program   one JSON value per line (stdin carries nothing else)
//	host ◀──program stdout── program  user output interleaved with MARK + JSON + "\n"
//
// MARK is a random token chosen per run and given to the program (as an
// argument or inside its wrapper), so ordinary output cannot be taken for a
// frame. Only stdio is used: every sandbox backend carries it (containers
// pass just stdio) and the sandbox needs no socket or network. What the
// JSON values mean is each caller's protocol; this package only splits and
// joins the streams: Demux takes the program's output apart, Encoder writes
// the host's frames.
package frame

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// Overflow says what a Demux does when a frame grows past its limit
// without its closing newline.
type Overflow int

const (
	// Drop discards the frame's bytes so far and goes on looking for
	// marks: the rest of that frame reaches the sink as output. A driver
	// that sends such a frame is broken, but later frames still count.
	Drop Overflow = iota
	// PassThrough writes the frame's bytes so far to the sink and stops
	// recognising frames for good: everything after is output. Use it when
	// a frame may carry a result the caller must not half-read.
	PassThrough
)

// Options configure a Demux.
type Options struct {
	// Mark starts every frame; it must not be empty.
	Mark string
	// MaxFrame bounds one frame's JSON in bytes (see Overflow).
	MaxFrame int
	// Overflow is what happens to a frame over MaxFrame.
	Overflow Overflow
	// OnFrame gets each frame's JSON (without mark and newline) in stream
	// order, under the Demux's lock: it must not block on the Demux and
	// must not retain line.
	OnFrame func(line []byte)
}

// Demux splits one output stream of a program into user output, written to
// the current sink, and frames, passed to OnFrame. It is the program's
// Stdout (or Stderr) writer. Writes may cut the stream anywhere, even inside
// a mark. Safe for concurrent use.
type Demux struct {
	opts    Options
	mark    []byte
	mu      sync.Mutex
	sink    io.Writer
	buf     []byte
	inFrame bool
	broken  bool
}

// NewDemux returns a Demux whose output goes to sink (nil discards it
// until SetSink).
func NewDemux(opts Options, sink io.Writer) *Demux {
	return &Demux{opts: opts, mark: []byte(opts.Mark), sink: sink}
}

// SetSink directs user output to w from now on (nil discards it).
func (d *Demux) SetSink(w io.Writer) {
	d.mu.Lock()
	d.sink = w
	d.mu.Unlock()
}

// Write implements io.Writer; it never fails and never blocks on anything
// but the sink and OnFrame.
func (d *Demux) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf = append(d.buf, p...)
	for d.step() {
	}
	return len(p), nil
}

// Flush writes output held back because it might begin a mark; a frame
// cut off by the end of the stream is dropped. Call it once the program is
// gone; the Demux is empty afterwards.
func (d *Demux) Flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.inFrame {
		d.emit(d.buf)
	}
	d.buf, d.inFrame = nil, false
}

// step consumes what it can from buf and reports whether to continue.
func (d *Demux) step() bool {
	if d.inFrame {
		return d.frameEnd()
	}
	if i := bytes.Index(d.buf, d.mark); i >= 0 && !d.broken {
		d.emit(d.buf[:i])
		d.buf, d.inFrame = d.buf[i+len(d.mark):], true
		return true
	}
	keep := partialMark(d.buf, d.mark)
	d.emit(d.buf[:len(d.buf)-keep])
	d.buf = append(d.buf[:0], d.buf[len(d.buf)-keep:]...)
	return false
}

// frameEnd hands over the frame in buf once its newline has come.
func (d *Demux) frameEnd() bool {
	i := bytes.IndexByte(d.buf, '\n')
	if i < 0 {
		if len(d.buf) > d.opts.MaxFrame {
			d.overflow()
		}
		return false
	}
	if d.opts.OnFrame != nil {
		d.opts.OnFrame(d.buf[:i])
	}
	d.buf, d.inFrame = d.buf[i+1:], false
	return true
}

func (d *Demux) overflow() {
	d.inFrame = false
	if d.opts.Overflow == PassThrough {
		d.broken = true
		d.emit(d.buf)
	}
	d.buf = d.buf[:0]
}

func (d *Demux) emit(b []byte) {
	if len(b) > 0 && d.sink != nil {
		_, _ = d.sink.Write(b)
	}
}

// partialMark is the length of the longest suffix of b that is a proper
// prefix of mark (a mark split across writes).
func partialMark(b, mark []byte) int {
	for n := min(len(mark)-1, len(b)); n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], mark[:n]) {
			return n
		}
	}
	return 0
}

// Encoder writes the host's frames to a program's stdin: each value as one
// line of JSON, in one Write, so frames from concurrent callers never
// interleave. It encodes into a buffer it keeps (up to keepBuf), so a
// frame costs no allocation beyond what encoding v needs. Safe for
// concurrent use.
type Encoder struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

// keepBuf is the largest encoding buffer an Encoder keeps between frames
// (a session's code is small, but one frame may carry megabytes).
const keepBuf = 64 << 10

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	e := &Encoder{w: w}
	e.enc = json.NewEncoder(&e.buf)
	return e
}

// Encode writes v as one frame: the bytes of json.Marshal(v) and a newline.
func (e *Encoder) Encode(v any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf.Reset()
	defer func() {
		if e.buf.Cap() > keepBuf {
			e.buf = bytes.Buffer{}
			e.enc = json.NewEncoder(&e.buf)
		}
	}()
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	_, err := e.w.Write(e.buf.Bytes())
	return err
}
