// Package clienthello reads the server name (SNI) of a TLS ClientHello
// without consuming it, so that a proxy can check where a tunnelled TLS
// connection claims to go before it passes a byte on.
package clienthello

import (
	"bufio"
	"encoding/binary"
	"errors"
	"strings"
)

// TLS record and handshake constants (RFC 8446).
const (
	recordHandshake = 0x16
	handshakeHello  = 0x01
	extServerName   = 0x0000
	maxRecord       = 16384 + 2048 // largest record a peer may send
	// BufferBytes is the buffer PeekSNI needs: one whole record.
	BufferBytes = 5 + maxRecord
)

// ErrNotHello: the first record is not a ClientHello that fits in it.
var ErrNotHello = errors.New("not a TLS ClientHello in one record")

// LooksTLS reports whether the next byte starts a TLS handshake record.
// It blocks until the program sends a byte: TLS and HTTP speak first.
func LooksTLS(r *bufio.Reader) (bool, error) {
	b, err := r.Peek(1)
	if err != nil {
		return false, err
	}
	return b[0] == recordHandshake, nil
}

// PeekSNI reads (without consuming) the first TLS record and returns the
// server name of the ClientHello in it, lowercase; "" when it has none.
// r must buffer at least BufferBytes.
func PeekSNI(r *bufio.Reader) (string, error) {
	head, err := r.Peek(5)
	if err != nil {
		return "", err
	}
	n := int(binary.BigEndian.Uint16(head[3:5]))
	if head[0] != recordHandshake || n > maxRecord {
		return "", ErrNotHello
	}
	rec, err := r.Peek(5 + n)
	if err != nil {
		return "", err
	}
	return helloSNI(rec[5:])
}

// helloSNI parses a handshake message holding a whole ClientHello.
func helloSNI(msg []byte) (string, error) {
	p := parser(msg)
	typ, ok1 := p.u8()
	size, ok2 := p.u24()
	if !ok1 || !ok2 || typ != handshakeHello || size > len(p) {
		return "", ErrNotHello
	}
	p = p[:size]
	// version and random, then session id, cipher suites, compression.
	if !p.skip(2+32) || !p.skipVec8() || !p.skipVec16() || !p.skipVec8() {
		return "", ErrNotHello
	}
	if len(p) == 0 {
		return "", nil // no extensions
	}
	exts, ok := p.vec16()
	if !ok {
		return "", ErrNotHello
	}
	return extensionsSNI(exts)
}

// extensionsSNI finds the host name in the server_name extension.
func extensionsSNI(p parser) (string, error) {
	for len(p) > 0 {
		typ, ok1 := p.u16()
		body, ok2 := p.vec16()
		if !ok1 || !ok2 {
			return "", ErrNotHello
		}
		if typ != extServerName {
			continue
		}
		list, ok := body.vec16()
		for ok && len(list) > 0 {
			kind, ok1 := list.u8()
			name, ok2 := list.vec16()
			if !ok1 || !ok2 {
				return "", ErrNotHello
			}
			if kind == 0 {
				return strings.TrimSuffix(strings.ToLower(string(name)), "."), nil
			}
		}
		return "", ErrNotHello
	}
	return "", nil
}

// parser reads big-endian fields off the front of a byte slice.
type parser []byte

func (p *parser) u8() (int, bool) {
	if len(*p) < 1 {
		return 0, false
	}
	v := int((*p)[0])
	*p = (*p)[1:]
	return v, true
}

func (p *parser) u16() (int, bool) {
	if len(*p) < 2 {
		return 0, false
	}
	v := int(binary.BigEndian.Uint16(*p))
	*p = (*p)[2:]
	return v, true
}

func (p *parser) u24() (int, bool) {
	if len(*p) < 3 {
		return 0, false
	}
	v := int((*p)[0])<<16 | int((*p)[1])<<8 | int((*p)[2])
	*p = (*p)[3:]
	return v, true
}

func (p *parser) skip(n int) bool {
	if len(*p) < n {
		return false
	}
	*p = (*p)[n:]
	return true
}

func (p *parser) vec(n int, ok bool) (parser, bool) {
	if !ok || len(*p) < n {
		return nil, false
	}
	v := (*p)[:n]
	*p = (*p)[n:]
	return v, true
}

func (p *parser) vec8() (parser, bool)  { n, ok := p.u8(); return p.vec(n, ok) }
func (p *parser) vec16() (parser, bool) { n, ok := p.u16(); return p.vec(n, ok) }
func (p *parser) skipVec8() bool        { _, ok := p.vec8(); return ok }
func (p *parser) skipVec16() bool       { _, ok := p.vec16(); return ok }
