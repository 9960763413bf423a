// Package checkpoint is the byte format of a session checkpoint and what
// the server does with it: frame it, seal it at rest, and carry a
// workspace's files in and out of it through the confinement layer.
//
// A checkpoint has two parts. The interpreter state is made inside the
// sandbox by the session's driver (pickle in python, v8.serialize in node)
// and is opaque here: the server stores it and hands it back to a new
// sandboxed driver, and never deserialises it. The workspace is read and
// written by the server through a files.Root (beneath the workspace, never
// through a link, with the sandbox user's rights), so a checkpoint can
// carry only what the sandbox itself could read and write.
//
// Layout (all integers little-endian):
//
//	"CXCK" 0x01                     magic and version
//	uint32 n, n bytes               header (JSON, Header)
//	Header.InterpBytes bytes        interpreter state (opaque)
//	Σ Header.Files[i].Size bytes    file contents, in Header.Files order
//
// Sealed (Sealer), the whole of it becomes "CXCE" 0x01, a 12-byte nonce
// and its AES-256-GCM ciphertext, authenticated together with the owner,
// the session and the checkpoint id, so a blob moved to another session or
// altered is refused before anything reads it.
package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Magic starts a plain checkpoint; SealedMagic a sealed one.
const (
	Magic       = "CXCK\x01"
	SealedMagic = "CXCE\x01"
)

// maxHeader bounds the header a decoder accepts: a checkpoint read back
// from a store may have been altered, so its lengths are not trusted.
const maxHeader = 16 << 20

// ErrCorrupt is returned for a checkpoint that cannot be decoded or
// authenticated.
var ErrCorrupt = errors.New("checkpoint is corrupt or was altered")

// Header describes a checkpoint.
type Header struct {
	Language string    `json:"language"`
	TakenAt  time.Time `json:"taken_at"`
	// Report is what the driver saved, re-created and could not carry
	// (names only; the interpreter state itself stays opaque).
	Report Report `json:"report"`
	// InterpBytes is the length of the interpreter state.
	InterpBytes int64 `json:"interp_bytes"`
	// Files are the workspace's entries, in order (a directory has
	// Size 0 and Dir set).
	Files []File `json:"files"`
}

// File is one workspace entry carried by a checkpoint.
type File struct {
	Path string `json:"p"`
	Mode uint32 `json:"m"`
	Size int64  `json:"s"`
	Dir  bool   `json:"d,omitempty"`
}

// Encode returns the plain checkpoint of h, the interpreter state and the
// contents of h.Files (data, concatenated in order).
func Encode(h Header, interp, data []byte) ([]byte, error) {
	h.InterpBytes = int64(len(interp))
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	var want int64
	for _, f := range h.Files {
		want += f.Size
	}
	if want != int64(len(data)) {
		return nil, fmt.Errorf("checkpoint: %d bytes of file data for files of %d bytes", len(data), want)
	}
	out := make([]byte, 0, len(Magic)+4+len(hb)+len(interp)+len(data))
	out = append(out, Magic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hb)))
	out = append(append(append(out, hb...), interp...), data...)
	return out, nil
}

// Decoded is a checkpoint taken apart; its slices alias the input.
type Decoded struct {
	Header Header
	Interp []byte
	// Data holds the file contents, in Header.Files order.
	Data []byte
}

// Decode takes a plain checkpoint apart, checking every length against
// what is there.
func Decode(b []byte) (Decoded, error) {
	if !bytes.HasPrefix(b, []byte(Magic)) || len(b) < len(Magic)+4 {
		return Decoded{}, fmt.Errorf("%w: not a checkpoint", ErrCorrupt)
	}
	b = b[len(Magic):]
	n := int64(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if n > maxHeader || n > int64(len(b)) {
		return Decoded{}, fmt.Errorf("%w: header length %d", ErrCorrupt, n)
	}
	var d Decoded
	if err := json.Unmarshal(b[:n], &d.Header); err != nil {
		return Decoded{}, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	b = b[n:]
	h := d.Header
	if h.InterpBytes < 0 || h.InterpBytes > int64(len(b)) {
		return Decoded{}, fmt.Errorf("%w: interpreter state length %d", ErrCorrupt, h.InterpBytes)
	}
	d.Interp, d.Data = b[:h.InterpBytes], b[h.InterpBytes:]
	var sum int64
	for _, f := range h.Files {
		if f.Size < 0 || f.Size > int64(len(d.Data))-sum || (f.Dir && f.Size != 0) {
			return Decoded{}, fmt.Errorf("%w: file %q size %d", ErrCorrupt, f.Path, f.Size)
		}
		sum += f.Size
	}
	if sum != int64(len(d.Data)) {
		return Decoded{}, fmt.Errorf("%w: %d bytes of file data for files of %d bytes", ErrCorrupt, len(d.Data), sum)
	}
	return d, nil
}
