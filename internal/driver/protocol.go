// Package driver runs the session drivers (driver_python.py and
// driver_node.js, each with its checkpoint half) inside a sandbox and
// speaks their protocol: one Conn per started driver runs code, takes and
// restores checkpoints of the interpreter's state, and reports how the
// process ended. A Conn carries checkpoint bytes without decoding them;
// what they hold is the business of the in-sandbox driver alone.
//
// A Conn serves one request at a time: its callers serialise Exec,
// Checkpoint, Restore and Warm (the session's execMu).
package driver

// Driver protocol (both drivers, driver_python.py and driver_node.js):
//
//	server ──stdin──▶ driver   one JSON object per line:
//	                           {"id": n, "op": "exec", "code": "…"}
//	                           {"op": "interrupt"}   (KeyboardInterrupt / SIGINT in running code)
//	                           {"id": n, "op": "checkpoint", "max": bytes}
//	                           {"id": n, "op": "restore", "bytes": b, "fork": bool} + b raw bytes
//	                           {"id": n, "op": "warm"}   (a spare loads what a restore needs)
//	server ◀─stdout── driver   user output, interleaved with frames MARK + JSON + "\n":
//	                           {"op": "ready", "pid": p, "rss_kb": k}          once, at start
//	                           {"op":"chunk","id":n,"data":"BASE64"}           checkpoint bytes, in order
//	                           {"id": n, "ok": bool, "error": "…", "interrupted": bool, "rss_kb": k,
//	                            "bytes": b, "too_big": bool, "report": {…}}   (checkpoint, restore)
//	server ◀─stderr── driver   user output, then MARK + {"id": n, "end": true} + "\n" per request
//
// MARK is a random per-session token passed as the driver's last argument
// (package frame splits the streams and writes the requests). A checkpoint
// is the driver's state serialised inside the sandbox (pickle in python,
// v8.serialize in node: checkpoint_python.py, checkpoint_node.js): the
// server only carries its bytes and never decodes them. Chunk frames have
// exactly the shape above (no spaces) so that they are read without a JSON
// decoder; a restore's payload follows its request line on stdin.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/frame"
)

// maxFrame bounds one frame; a driver that sends more is broken: the frame
// is dropped (frame.Drop).
const maxFrame = 8 << 20

// Reply is a decoded frame: a request's answer.
type Reply struct {
	Op          string `json:"op"`
	ID          int64  `json:"id"`
	OK          bool   `json:"ok"`
	End         bool   `json:"end"`
	Error       string `json:"error"`
	Interrupted bool   `json:"interrupted"`
	RSSKB       int64  `json:"rss_kb"`
	Pid         int    `json:"pid"`
	// Bytes, TooBig and Report answer checkpoint and restore requests.
	Bytes  int64             `json:"bytes"`
	TooBig bool              `json:"too_big"`
	Report checkpoint.Report `json:"report"`
}

// newDemux returns the demultiplexer of one of the driver's output streams:
// user output goes to the sink set per request, chunk frames to onChunk
// (decoded; nil: dropped) and other frames, decoded as replies, to onFrame
// (frames that are not JSON objects are ignored).
func newDemux(mark string, onFrame func(Reply), onChunk func(id int64, data []byte)) *frame.Demux {
	return frame.NewDemux(frame.Options{Mark: mark, MaxFrame: maxFrame, Overflow: frame.Drop, OnFrame: func(line []byte) {
		if id, data, ok := parseChunk(line); ok {
			if onChunk != nil {
				onChunk(id, data)
			}
			return
		}
		var r Reply
		if json.Unmarshal(line, &r) == nil {
			onFrame(r)
		}
	}}, nil)
}

var (
	chunkHead = []byte(`{"op":"chunk","id":`)
	chunkData = []byte(`,"data":"`)
	chunkTail = []byte(`"}`)
)

// parseChunk decodes a chunk frame (see the protocol above); ok is false
// for any other frame. A chunk that does not decode is returned empty, so
// the checkpoint it belongs to fails its length check.
func parseChunk(line []byte) (id int64, data []byte, ok bool) {
	rest, found := bytes.CutPrefix(line, chunkHead)
	if !found {
		return 0, nil, false
	}
	num, b64, found := bytes.Cut(rest, chunkData)
	b64, tail := bytes.CutSuffix(b64, chunkTail)
	id, err := strconv.ParseInt(string(num), 10, 64)
	if !found || !tail || err != nil {
		return id, nil, true
	}
	data = make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(data, b64)
	if err != nil {
		return id, nil, true
	}
	return id, data[:n], true
}
