package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"

	"github.com/codexec/codexec/internal/egress/clienthello"
	"github.com/codexec/codexec/internal/egress/intercept"
)

// handleProxy serves one connection to the explicit proxy: a CONNECT
// tunnel, or plain HTTP requests in absolute form.
func (b *Binding) handleProxy(raw net.Conn) {
	f := b.newFlow()
	c := f.wrap(raw, true)
	br := bufio.NewReaderSize(c, clienthello.BufferBytes)
	req, err := readRequest(c, br)
	if errors.Is(err, errHeadTooLarge) {
		writeStatus(c, http.StatusRequestHeaderFieldsTooLarge, err.Error())
	}
	if err != nil {
		return // not HTTP, or closed before a request: nothing to audit
	}
	switch {
	case req.Method == http.MethodConnect:
		b.connect(f, c, br, req)
	case req.URL.IsAbs():
		b.forwardHTTP(f, c, br, req, nil, proxyRoute)
	default:
		writeStatus(c, http.StatusBadRequest, "codexec egress proxy: send CONNECT host:port, or a request for an absolute http:// URL (HTTP_PROXY and HTTPS_PROXY do this)")
	}
}

// connect serves "CONNECT host:port": decide, dial, confirm, then relay.
func (b *Binding) connect(f *flow, c *meteredConn, br *bufio.Reader, req *http.Request) {
	host, port, err := splitTarget(req.Host, 0)
	if err != nil {
		writeStatus(c, http.StatusBadRequest, "codexec egress proxy: "+err.Error())
		return
	}
	d := dest{host: host, port: port}
	up, addr, ok := b.open(c, d)
	if !ok {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		b.allow(d, false)
		return
	}
	b.relay(f, c, br, d, addr, up, func(client *bufferedConn) {
		b.allow(d, false)
		f.target(d)
		b.tunnel(f, client, up)
	})
}

// open decides d and dials it. On denial it records it, tells the
// program why (an HTTP error response) and returns false.
func (b *Binding) open(c net.Conn, d dest) (net.Conn, netip.AddrPort, bool) {
	addr, den := b.destination(b.ctx, d.host, d.port)
	if den != nil {
		b.deny(d, den.reason)
		writeStatus(c, http.StatusForbidden, den.message)
		return nil, addr, false
	}
	up, err := b.dial(b.ctx, addr)
	if err != nil {
		b.deny(d, ReasonUnreachable)
		writeStatus(c, http.StatusBadGateway, fmt.Sprintf("codexec egress: %s:%d is allowed but could not be reached: %v", d.host, d.port, err))
		return nil, addr, false
	}
	return up, addr, true
}

// relay looks at what the program sends first on an allowed stream: a
// TLS ClientHello must name d.host (or none, for an IP literal) and is
// intercepted when a credential applies, else tunnelled; anything else
// goes to plain.
func (b *Binding) relay(f *flow, c *meteredConn, br *bufio.Reader, d dest, addr netip.AddrPort, up net.Conn, plain func(*bufferedConn)) {
	client := &bufferedConn{meteredConn: c, r: br}
	isTLS, err := clienthello.LooksTLS(br)
	if err != nil {
		b.allow(d, false) // closed before sending anything
		return
	}
	if !isTLS {
		plain(client)
		return
	}
	sni, err := clienthello.PeekSNI(br)
	if err != nil || !sniMatches(sni, d.host) {
		b.deny(d, ReasonSNI)
		return
	}
	if cred, value, ok := b.s.credentialFor(b.principal, d.host, d.port); ok {
		b.intercept(f, client, d, addr, up, cred, value)
		return
	}
	b.allow(d, false)
	f.target(d)
	b.tunnel(f, client, up)
}

// sniMatches: the ClientHello names the host the connection was allowed
// for; without a name only an IP literal destination is fine.
func sniMatches(sni, host string) bool {
	if sni == "" {
		_, err := netip.ParseAddr(host)
		return err == nil
	}
	return sni == host
}

// intercept hands a TLS connection that gets a credential to the
// interception side, with the upstream already dialed for its first
// connection (later ones dial the same checked address).
func (b *Binding) intercept(f *flow, client *bufferedConn, d dest, addr netip.AddrPort, up net.Conn, cred *Credential, value string) {
	cert, err := b.s.ca.CertFor(d.host)
	if err != nil {
		b.deny(d, ReasonUnreachable)
		return
	}
	b.allow(d, true)
	f.target(d)
	// Bytes are counted on the program's side of every connection (TLS
	// records included), the same as for tunnels and as the limit counts.
	dial := b.reuseThenDial(f, up, addr)
	ic := &intercept.Credential{Header: cred.Header, Placeholder: placeholderValue(*cred), Value: value}
	err = intercept.Serve(b.ctx, client, d.host, d.port, ic, cert, dial, b.s.roots, func(int64, int64) {})
	switch {
	case errors.Is(err, intercept.ErrHostMismatch):
		b.note(d, ReasonHostHeader)
	case errors.Is(err, intercept.ErrUpstream):
		b.note(d, ReasonUnreachable)
	}
}

// reuseThenDial returns a dialer for interception that gives up (already
// connected to addr) first, then dials addr again: the address was checked
// once, so it is the only one used.
func (b *Binding) reuseThenDial(f *flow, up net.Conn, addr netip.AddrPort) func(context.Context) (net.Conn, error) {
	var mu sync.Mutex
	first := up
	return func(ctx context.Context) (net.Conn, error) {
		mu.Lock()
		conn := first
		first = nil
		mu.Unlock()
		if conn == nil {
			var err error
			if conn, err = b.dial(ctx, addr); err != nil {
				return nil, err
			}
		}
		return f.wrap(conn, false), nil
	}
}

// tunnel copies bytes both ways until both directions end (or one fails,
// or the flow is idle too long, or the binding closes).
func (b *Binding) tunnel(f *flow, client *bufferedConn, up net.Conn) {
	// Bytes the proxy already read from the program (the ClientHello it
	// peeked at) go first, counted; then the kernel moves the rest.
	if n := client.r.Buffered(); n > 0 {
		head, _ := client.r.Peek(n)
		if _, err := up.Write(head); err != nil || !f.add(int64(n), 0) {
			_ = client.Close()
			_ = up.Close()
			return
		}
		_, _ = client.r.Discard(n)
	}
	raw := client.meteredConn.Conn
	done := make(chan error, 1)
	go func() {
		err := f.pump(up, raw, true)
		closeWrite(up)
		done <- err
	}()
	err := f.pump(raw, up, false)
	closeWrite(raw)
	if err != nil {
		_ = raw.Close()
		_ = up.Close()
	}
	if err := <-done; err != nil {
		_ = up.Close()
	}
}

// closeWrite half-closes c where it can, so a tunnel passes on an end of
// stream without ending the other direction.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// splitTarget parses "host:port" (port defaults to defPort when absent
// and defPort is not 0) and normalizes the host.
func splitTarget(hostport string, defPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort == 0 {
			return "", 0, fmt.Errorf("%q is not host:port", hostport)
		}
		host, portText = hostport, strconv.Itoa(defPort)
	}
	port, err := parsePort(portText)
	if err != nil {
		return "", 0, err
	}
	host = normalizeHost(host)
	if host == "" {
		return "", 0, fmt.Errorf("%q has no host", hostport)
	}
	return host, port, nil
}

// writeStatus writes a short plain-text HTTP response that ends the
// connection; the body is the sentence the program prints.
func writeStatus(w io.Writer, code int, msg string) {
	body := msg + "\n"
	_, _ = fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}
