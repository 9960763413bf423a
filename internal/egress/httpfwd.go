package egress

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/netip"

	"github.com/codexec/codexec/internal/egress/clienthello"
)

// plainUpstream is the plain HTTP connection serving a flow's requests to d.
type plainUpstream struct {
	d    dest
	conn net.Conn
	br   *bufio.Reader
}

// route says where a plain HTTP request goes; a *denial is told to the
// program as 403 and audited, any other error as 400.
type route func(req *http.Request) (dest, error)

// proxyRoute routes an absolute-form request to the explicit proxy. Plain
// HTTP only: credentials are never sent in clear, and https URLs go
// through CONNECT.
func proxyRoute(req *http.Request) (dest, error) {
	if req.URL.Scheme != "http" {
		return dest{}, errors.New("codexec egress proxy: only http:// URLs are forwarded as plain requests; use CONNECT (HTTPS_PROXY) for " + req.URL.Scheme)
	}
	host, port, err := splitTarget(req.URL.Host, 80)
	if err != nil {
		return dest{}, errors.New("codexec egress proxy: " + err.Error())
	}
	return dest{host: host, port: port}, nil
}

// hostRoute routes every request of a transparent connection to d, the
// name its stub address stands for; the Host header must name it too (a
// shared front must not serve another virtual host).
func hostRoute(d dest) route {
	return func(req *http.Request) (dest, error) {
		host, _, err := splitTarget(req.Host, d.port)
		if err != nil || host != d.host {
			return d, &denial{reason: ReasonHostHeader, message: "codexec egress: the Host header " + req.Host + " does not name " + d.host + ", the host this connection was made for"}
		}
		return d, nil
	}
}

// forwardHTTP forwards plain HTTP requests read from the program one at a
// time, each to the upstream its route names (kept open while the next
// request goes to the same place), until either side ends the connection.
func (b *Binding) forwardHTTP(f *flow, c *meteredConn, br *bufio.Reader, req *http.Request, up *plainUpstream, pick route) {
	defer func() {
		if up != nil {
			_ = up.conn.Close()
		}
	}()
	for {
		var ok bool
		if up, ok = b.routeRequest(f, c, req, up, pick); !ok {
			return
		}
		switch exchange(c, req, up) {
		case upgraded:
			b.tunnel(f, &bufferedConn{meteredConn: c, r: br}, &readerConn{Conn: up.conn, r: up.br})
			return
		case endConn:
			return
		}
		// The next request's bytes count for wherever it goes.
		f.target(dest{})
		var err error
		if req, err = readRequest(c, br); err != nil {
			return
		}
	}
}

// routeRequest returns the upstream for req, opening (and auditing) a
// connection when req goes elsewhere than the current one.
func (b *Binding) routeRequest(f *flow, c *meteredConn, req *http.Request, up *plainUpstream, pick route) (*plainUpstream, bool) {
	d, err := pick(req)
	if err != nil {
		f.target(dest{})
		var den *denial
		if errors.As(err, &den) {
			b.deny(d, den.reason)
			writeStatus(c, http.StatusForbidden, den.message)
		} else {
			writeStatus(c, http.StatusBadRequest, err.Error())
		}
		return up, false
	}
	if up != nil && up.d == d {
		f.target(d)
		return up, true
	}
	if up != nil {
		_ = up.conn.Close()
	}
	conn, _, ok := b.open(c, d)
	if !ok {
		f.target(dest{})
		return nil, false
	}
	b.allow(d, false)
	f.target(d)
	uc := f.wrap(conn, false)
	return &plainUpstream{d: d, conn: uc, br: bufio.NewReader(uc)}, true
}

// outcome is what a connection does after an exchange.
type outcome int

const (
	endConn     outcome = iota // either side ends the connection
	nextRequest                // keep-alive: read the next request
	upgraded                   // 101: the rest is another protocol, relayed as is
)

// exchange sends req upstream and its response (after any interim 1xx)
// back, and says what the connection does next.
func exchange(c net.Conn, req *http.Request, up *plainUpstream) outcome {
	outgoing(req)
	if err := req.Write(up.conn); err != nil {
		writeStatus(c, http.StatusBadGateway, "codexec egress: sending the request upstream failed: "+err.Error())
		return endConn
	}
	for {
		resp, err := http.ReadResponse(up.br, req)
		if err != nil {
			writeStatus(c, http.StatusBadGateway, "codexec egress: reading the upstream response failed: "+err.Error())
			return endConn
		}
		err = resp.Write(c)
		_ = resp.Body.Close()
		switch {
		case err != nil:
			return endConn
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return upgraded
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue
		case resp.Close || req.Close:
			return endConn
		}
		return nextRequest
	}
}

// readerConn reads through r (bytes already buffered from Conn first).
type readerConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the connection underneath.
func (c *readerConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// outgoing turns a request the program sent to the proxy into the one
// sent upstream: origin form, without the proxy's own headers, and with
// nothing added (no default User-Agent).
func outgoing(req *http.Request) {
	req.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate"} {
		req.Header.Del(h)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = nil
	}
}

// handleTransparent serves a connection a program made to a stub address
// (a name the DNS stub answered) on a captured port: the address gives
// the name back, then it is served as CONNECT would be, except that plain
// HTTP is forwarded request by request with its Host header checked.
func (b *Binding) handleTransparent(raw net.Conn) {
	local, err := netip.ParseAddrPort(raw.LocalAddr().String())
	if err != nil {
		return
	}
	d, ok := b.transparentDest(local)
	if !ok {
		b.deny(d, ReasonNoName)
		return // closed at once: the program gets a reset, not a hang
	}
	addr, den := b.destination(b.ctx, d.host, d.port)
	if den != nil {
		b.deny(d, den.reason)
		return
	}
	up, err := b.dial(b.ctx, addr)
	if err != nil {
		b.deny(d, ReasonUnreachable)
		return
	}
	defer up.Close()
	f := b.newFlow()
	c := f.wrap(raw, true)
	br := bufio.NewReaderSize(c, clienthello.BufferBytes)
	b.relay(f, c, br, d, addr, up, func(client *bufferedConn) { b.plainTransparent(f, client, br, d, up) })
}

// stubRange holds the stub addresses the DNS stub hands out.
var stubRange = netip.MustParsePrefix("127.64.0.0/10")

// transparentDest is where a transparent connection to local goes: the
// name a stub address was given for, or an address outside the sandbox's
// loopback taken as an IP literal (allowed only if a rule names it). A
// stub address no name was given, or another loopback address, has no
// destination.
func (b *Binding) transparentDest(local netip.AddrPort) (dest, bool) {
	addr, port := local.Addr().Unmap(), int(local.Port())
	if name, ok := b.names.name(addr); ok {
		return dest{host: name, port: port}, true
	}
	return dest{host: addr.String(), port: port}, !stubRange.Contains(addr) && !addr.IsLoopback()
}

// plainTransparent serves a non-TLS transparent connection: HTTP request
// by request when it starts like HTTP, else a tunnel.
func (b *Binding) plainTransparent(f *flow, client *bufferedConn, br *bufio.Reader, d dest, up net.Conn) {
	if !looksHTTP(br) {
		b.allow(d, false)
		f.target(d)
		b.tunnel(f, client, up)
		return
	}
	req, err := readRequest(client.meteredConn, br)
	if err != nil {
		return // not HTTP after all; the bytes are consumed, so end here
	}
	if _, err := hostRoute(d)(req); err != nil {
		var den *denial
		errors.As(err, &den)
		b.deny(d, den.reason)
		writeStatus(client.meteredConn, http.StatusForbidden, den.message)
		return
	}
	b.allow(d, false)
	f.target(d)
	uc := f.wrap(up, false)
	first := &plainUpstream{d: d, conn: uc, br: bufio.NewReader(uc)}
	b.forwardHTTP(f, client.meteredConn, br, req, first, hostRoute(d))
}

// httpMethods start the request line of HTTP/1.x.
var httpMethods = []string{"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS ", "PATCH ", "TRACE "}

// looksHTTP reports whether what the program sent so far starts like an
// HTTP request (judged on the bytes already buffered: no waiting).
func looksHTTP(br *bufio.Reader) bool {
	head, _ := br.Peek(br.Buffered())
	for _, m := range httpMethods {
		n := min(len(head), len(m))
		if n > 0 && string(head[:n]) == m[:n] {
			return true
		}
	}
	return false
}
