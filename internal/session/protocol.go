package session

// Driver protocol (both drivers, driver_python.py and driver_node.js):
//
//	server ──stdin──▶ driver   one JSON object per line:
//	                           {"id": n, "op": "exec", "code": "…"}
//	                           {"op": "interrupt"}   (KeyboardInterrupt / SIGINT in running code)
//	server ◀─stdout── driver   user output, interleaved with frames MARK + JSON + "\n":
//	                           {"op": "ready", "pid": p, "rss_kb": k}          once, at start
//	                           {"id": n, "ok": bool, "error": "…", "interrupted": bool, "rss_kb": k}
//	server ◀─stderr── driver   user output, then MARK + {"id": n, "end": true} + "\n" per request
//
// MARK is a random per-session token passed as the driver's last argument,
// so ordinary output cannot be mistaken for a frame. Frames need no
// dedicated file descriptors: every sandbox backend (including containers,
// which pass only stdio) can carry them. Messages are request/response by
// id, so later features (code mode tool calls from the sandbox) can add ops
// in the other direction without a new channel.

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// maxFrame bounds one frame; a driver that sends more is treated as broken.
const maxFrame = 8 << 20

// reply is a decoded frame.
type reply struct {
	Op          string `json:"op"`
	ID          int64  `json:"id"`
	OK          bool   `json:"ok"`
	End         bool   `json:"end"`
	Error       string `json:"error"`
	Interrupted bool   `json:"interrupted"`
	RSSKB       int64  `json:"rss_kb"`
	Pid         int    `json:"pid"`
}

// demux splits one output stream of the driver into user output (written
// to the current sink) and frames (passed to onFrame). It is the Stdout or
// Stderr writer of the driver process.
type demux struct {
	mark    []byte
	onFrame func(reply)
	mu      sync.Mutex
	sink    io.Writer
	buf     []byte
	inFrame bool
	broken  bool
}

func newDemux(mark string, onFrame func(reply)) *demux {
	return &demux{mark: []byte(mark), onFrame: onFrame}
}

// setSink directs user output to w (nil discards it).
func (d *demux) setSink(w io.Writer) {
	d.mu.Lock()
	d.sink = w
	d.mu.Unlock()
}

// Write implements io.Writer; it never fails.
func (d *demux) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf = append(d.buf, p...)
	for d.step() {
	}
	return len(p), nil
}

// step consumes what it can from buf and reports whether to continue.
func (d *demux) step() bool {
	if d.inFrame {
		i := bytes.IndexByte(d.buf, '\n')
		if i < 0 {
			if len(d.buf) > maxFrame {
				d.broken, d.buf, d.inFrame = true, nil, false
			}
			return false
		}
		var r reply
		if json.Unmarshal(d.buf[:i], &r) == nil {
			d.onFrame(r)
		}
		d.buf, d.inFrame = d.buf[i+1:], false
		return true
	}
	if i := bytes.Index(d.buf, d.mark); i >= 0 {
		d.emit(d.buf[:i])
		d.buf, d.inFrame = d.buf[i+len(d.mark):], true
		return true
	}
	keep := partialPrefix(d.buf, d.mark)
	d.emit(d.buf[:len(d.buf)-keep])
	d.buf = append(d.buf[:0], d.buf[len(d.buf)-keep:]...)
	return false
}

func (d *demux) emit(b []byte) {
	if len(b) > 0 && d.sink != nil {
		_, _ = d.sink.Write(b)
	}
}

// partialPrefix returns the length of the longest suffix of b that is a
// proper prefix of mark (a mark split across writes).
func partialPrefix(b, mark []byte) int {
	for n := min(len(mark)-1, len(b)); n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], mark[:n]) {
			return n
		}
	}
	return 0
}
