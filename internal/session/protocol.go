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
// MARK is a random per-session token passed as the driver's last argument
// (package frame splits the streams and writes the requests).

import (
	"encoding/json"

	"github.com/codexec/codexec/internal/frame"
)

// maxFrame bounds one frame; a driver that sends more is broken: the frame
// is dropped (frame.Drop).
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

// newDemux returns the demultiplexer of one of the driver's output streams:
// user output goes to the sink set per request, frames decoded as replies
// to onFrame (frames that are not JSON objects are ignored).
func newDemux(mark string, onFrame func(reply)) *frame.Demux {
	return frame.NewDemux(frame.Options{Mark: mark, MaxFrame: maxFrame, Overflow: frame.Drop, OnFrame: func(line []byte) {
		var r reply
		if json.Unmarshal(line, &r) == nil {
			onFrame(r)
		}
	}}, nil)
}
