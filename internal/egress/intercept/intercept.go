// Package intercept adds a credential to the HTTPS requests a sandboxed
// program sends to one host without the program ever holding it: the
// program's TLS connection ends at a leaf signed by codexec's own CA
// (Authority, which the sandbox trusts), each HTTP/1.1 request is checked
// and given the credential, and goes on over a verified TLS connection of
// the proxy's own. The egress proxy decides which connections come here.
package intercept

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Interception: the program's TLS connection to a host that has a
// credential ends here, at a leaf the sandbox trusts; each HTTP/1.1
// request is read, gets the credential, and is sent on over a verified TLS
// connection of the proxy's own. Bodies stream both ways: nothing holds a
// whole request or response in memory.

var (
	// ErrHostMismatch: a request on an intercepted connection named
	// another host than the one the connection was allowed for.
	ErrHostMismatch = errors.New("a request named another host than its connection")
	// ErrUpstream: the proxy could not reach the host, or could not
	// verify it. Errors wrapping it are *UpstreamError.
	ErrUpstream = errors.New("upstream unreachable")
)

// UpstreamError says why the host could not be used; Reason is safe to
// show to the program (no credential in it).
type UpstreamError struct {
	Reason string
	Err    error
}

func (e *UpstreamError) Error() string        { return e.Reason + ": " + e.Err.Error() }
func (e *UpstreamError) Unwrap() []error      { return []error{ErrUpstream, e.Err} }
func (e *UpstreamError) Is(target error) bool { return target == ErrUpstream }

// Credential is what goes into each request: Value in Header, replacing
// Placeholder where the program put it (see Serve). Printing it never
// shows Value.
type Credential struct {
	Header, Placeholder, Value string
}

// Format describes c without its value.
func (c *Credential) Format(f fmt.State, _ rune) {
	if c == nil {
		_, _ = fmt.Fprint(f, "no credential")
		return
	}
	_, _ = fmt.Fprintf(f, "credential in %s (placeholder %s)", c.Header, c.Placeholder)
}

// clientBuffer is the size of the buffers on either side; a TLS record
// holds at most 16 KiB, so this keeps a couple of records per write.
const clientBuffer = 32 << 10

// Serve serves client (a connection to host:port the policy allowed,
// right after CONNECT, or a transparent one) until either side closes it
// or ctx ends: TLS with cert towards the program, each request checked
// (its Host must be host), given cred (nil: none), and sent
// through one upstream connection made with dial and verified against
// roots. count gets the bytes the program sent and received, as they pass
// (calls are serialized). A nil error means the program closed the
// connection; ErrHostMismatch and ErrUpstream (*UpstreamError) say why it
// was ended otherwise, after the program got a 403 or a 502.
func Serve(ctx context.Context, client net.Conn, host string, port int, cred *Credential,
	cert *tls.Certificate, dial func(context.Context) (net.Conn, error), roots *x509.CertPool,
	count func(sent, recv int64)) error {
	conn := tls.Server(&countingConn{Conn: client, count: count}, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	s := &session{
		host: normalHost(host), port: port, cred: cred, dial: dial, roots: roots,
		client: conn, cr: bufio.NewReaderSize(conn, clientBuffer), cw: bufio.NewWriterSize(conn, clientBuffer),
	}
	stop := context.AfterFunc(ctx, s.close)
	defer stop()
	defer s.close()
	if err := conn.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake with the program for %s: %w", host, err)
	}
	return s.serve(ctx)
}

// session is one intercepted connection and its upstream.
type session struct {
	host   string
	port   int
	cred   *Credential
	dial   func(context.Context) (net.Conn, error)
	roots  *x509.CertPool
	client *tls.Conn
	cr     *bufio.Reader
	cw     *bufio.Writer
	mu     sync.Mutex // guards up and closed: close runs from ctx's end
	up     *upstream
	closed bool
}

// Format describes s without the credential's value.
func (s *session) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "intercepted connection to %s:%d (%v)", s.host, s.port, s.cred)
}

// upstream is the proxy's own TLS connection to the host.
type upstream struct {
	conn *tls.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

func (s *session) serve(ctx context.Context) error {
	for {
		req, err := http.ReadRequest(s.cr)
		if err != nil {
			var netErr *net.OpError
			switch {
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || ctx.Err() != nil:
				return nil // the program closed the connection, or the run ended
			case errors.As(err, &netErr):
				return fmt.Errorf("read a request for %s: %w", s.host, err) // no one to answer
			}
			s.reply(http.StatusBadRequest, "codexec egress: could not read the HTTP/1.1 request: "+err.Error())
			return fmt.Errorf("read a request for %s: %w", s.host, err)
		}
		keep, err := s.exchange(ctx, req)
		if err != nil || !keep {
			return err
		}
	}
}

// exchange forwards one request and its response; keep says whether the
// program's connection may carry another.
func (s *session) exchange(ctx context.Context, req *http.Request) (keep bool, err error) {
	defer req.Body.Close()
	if req.Host == "" {
		s.reply(http.StatusBadRequest, "codexec egress: the request has no Host header; HTTP/1.1 requests need one")
		return false, fmt.Errorf("%w: a request without a Host header", ErrHostMismatch)
	}
	if !s.hostMatches(req.Host) {
		s.reply(http.StatusForbidden, fmt.Sprintf("codexec egress: this connection was opened to %s and may carry requests for it only; "+
			"the request names %q. Open a new connection for another host.", s.host, req.Host))
		return false, fmt.Errorf("%w: connection to %s, request for %q", ErrHostMismatch, s.host, req.Host)
	}
	clientClose := req.Close
	if err := s.prepare(req); err != nil {
		return false, err
	}
	resp, up, err := s.roundTrip(ctx, req)
	if err != nil {
		reason := "the connection to it failed before its response came"
		var ue *UpstreamError
		if errors.As(err, &ue) {
			reason = ue.Reason
		}
		if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
			s.reply(http.StatusBadGateway, fmt.Sprintf("codexec egress: %s:%d: %s", s.host, s.port, reason))
		}
		return false, err
	}
	defer resp.Body.Close()
	return s.respond(req, resp, up, clientClose)
}

// prepare makes req ready to go upstream: hop-by-hop headers gone, the
// credential in, and no header the program did not send added by the
// writer. A program waiting for "100 Continue" gets it here.
func (s *session) prepare(req *http.Request) error {
	expect := req.Header.Get("Expect")
	stripHopByHop(req.Header)
	req.Header.Del("Expect")
	req.Close = false
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // stops Request.Write adding Go's own
	}
	s.inject(req.Header)
	if strings.EqualFold(expect, "100-continue") && req.Body != http.NoBody {
		if _, err := io.WriteString(s.cw, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return err
		}
		return s.cw.Flush()
	}
	return nil
}

// inject puts the credential in its header: the value replaces every
// placeholder in it, or becomes the header when the program sent none
// (or sent one without the placeholder: the host gets the operator's
// credential, never a value of the program's choosing). No other header
// is touched, so a placeholder elsewhere goes out as it came.
func (s *session) inject(h http.Header) {
	if s.cred == nil {
		return
	}
	vals := h[s.cred.Header]
	found := false
	for i, v := range vals {
		if s.cred.Placeholder != "" && strings.Contains(v, s.cred.Placeholder) {
			vals[i] = strings.ReplaceAll(v, s.cred.Placeholder, s.cred.Value)
			found = true
		}
	}
	if !found {
		h[s.cred.Header] = []string{s.cred.Value}
	}
}

// roundTrip sends req upstream and reads the response head, relaying
// informational (1xx) responses to the program. An upstream connection
// kept from an earlier request may have been closed by the host meanwhile;
// a request without a body is then sent once more on a new one.
func (s *session) roundTrip(ctx context.Context, req *http.Request) (*http.Response, *upstream, error) {
	reused := s.upstream() != nil
	resp, up, err := s.try(ctx, req)
	if err != nil && reused && req.Body == http.NoBody && !errors.Is(err, ErrUpstream) && ctx.Err() == nil {
		s.dropUpstream()
		resp, up, err = s.try(ctx, req)
	}
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		if resp.StatusCode == http.StatusSwitchingProtocols {
			err = &UpstreamError{Reason: "switching protocols (WebSocket) is not supported on a connection that carries a credential",
				Err: errors.New("101 Switching Protocols")}
			break
		}
		if err = s.relayInformational(resp); err == nil {
			resp, err = http.ReadResponse(up.r, req)
		}
	}
	if err != nil {
		s.dropUpstream()
		return nil, nil, err
	}
	return resp, up, nil
}

// try writes req on the upstream connection (made if there is none) and
// reads the response head.
func (s *session) try(ctx context.Context, req *http.Request) (*http.Response, *upstream, error) {
	up, err := s.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	if req.Body != http.NoBody {
		req.Body = &flushingReader{r: req.Body, pending: s.cr, w: up.w}
	}
	if err := req.Write(byteWriter{up.w}); err != nil {
		return nil, nil, fmt.Errorf("send the request to %s: %w", s.host, err)
	}
	if err := up.w.Flush(); err != nil {
		return nil, nil, fmt.Errorf("send the request to %s: %w", s.host, err)
	}
	resp, err := http.ReadResponse(up.r, req)
	if err != nil {
		return nil, nil, fmt.Errorf("read the response of %s: %w", s.host, err)
	}
	return resp, up, nil
}

func (s *session) relayInformational(resp *http.Response) error {
	resp.ProtoMajor, resp.ProtoMinor = 1, 1
	stripHopByHop(resp.Header)
	if err := resp.Write(byteWriter{s.cw}); err != nil {
		return err
	}
	return s.cw.Flush()
}

// respond writes resp to the program, streaming its body; it flushes
// whenever the upstream has nothing more buffered, so a response that
// trickles (server-sent events) reaches the program as it comes.
func (s *session) respond(req *http.Request, resp *http.Response, up *upstream, clientClose bool) (bool, error) {
	upstreamClose := resp.Close
	closeDelimited := resp.ContentLength < 0 && !isChunked(resp.TransferEncoding)
	if !req.ProtoAtLeast(1, 1) && isChunked(resp.TransferEncoding) {
		// An HTTP/1.0 program cannot read chunks: the end of the
		// connection marks the end of the body instead.
		resp.TransferEncoding, closeDelimited = nil, true
	}
	resp.Close = clientClose || closeDelimited
	resp.ProtoMajor, resp.ProtoMinor = 1, 1
	stripHopByHop(resp.Header)
	if resp.Body != http.NoBody {
		resp.Body = readCloser{&flushingReader{r: resp.Body, pending: up.r, w: s.cw}, resp.Body}
	}
	err := resp.Write(byteWriter{s.cw})
	if err == nil {
		err = s.cw.Flush()
	}
	if err != nil || upstreamClose || closeDelimited {
		s.dropUpstream()
	}
	if err != nil {
		return false, fmt.Errorf("relay the response of %s %s: %w", req.Method, s.host, err)
	}
	return !resp.Close, nil
}

// connect returns the upstream connection, dialling and verifying a new
// one when there is none.
func (s *session) connect(ctx context.Context) (*upstream, error) {
	if up := s.upstream(); up != nil {
		return up, nil
	}
	raw, err := s.dial(ctx)
	if err != nil {
		return nil, &UpstreamError{Reason: "could not connect", Err: err}
	}
	conn := tls.Client(raw, &tls.Config{
		ServerName: s.host,
		RootCAs:    s.roots,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, &UpstreamError{Reason: tlsReason(err), Err: err}
	}
	up := &upstream{conn: conn, r: bufio.NewReaderSize(conn, clientBuffer), w: bufio.NewWriterSize(conn, clientBuffer)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = conn.Close()
		return nil, net.ErrClosed
	}
	s.up = up
	return up, nil
}

// tlsReason says in words why the host's TLS could not be verified.
func tlsReason(err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &unknown):
		return "its certificate is not signed by a trusted authority (an operator can add the CA with CODEXEC_EGRESS_CA_FILE)"
	case errors.As(err, &hostname):
		return "its certificate is not valid for this host name"
	case errors.As(err, &invalid):
		return "its certificate is invalid or expired"
	}
	return "the TLS handshake failed"
}

func (s *session) upstream() *upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

func (s *session) dropUpstream() {
	s.mu.Lock()
	up := s.up
	s.up = nil
	s.mu.Unlock()
	if up != nil {
		_ = up.conn.Close()
	}
}

// close ends both connections; it runs when ctx ends, and once done.
func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.dropUpstream()
	_ = s.client.Close()
}

// reply writes a short plain-text response of the proxy's own and ends the
// program's connection after it.
func (s *session) reply(status int, msg string) {
	body := msg + "\n"
	_, _ = fmt.Fprintf(s.cw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	_ = s.cw.Flush()
}

// hostMatches reports whether a request's Host names the connection's
// host (and port, when it gives one).
func (s *session) hostMatches(reqHost string) bool {
	h, p, err := net.SplitHostPort(reqHost)
	if err != nil {
		h, p = reqHost, ""
	}
	return normalHost(h) == s.host && (p == "" || p == strconv.Itoa(s.port))
}

// normalHost is host as the rules compare it: lower case, no brackets,
// no trailing dot.
func normalHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// hopByHop are the headers about one connection (RFC 9110 7.6.1); they
// never go to the other side.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// stripHopByHop removes hopByHop and every header Connection names.
func stripHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

func isChunked(te []string) bool { return len(te) > 0 && te[0] == "chunked" }

// flushingReader flushes w before reading from r whenever pending (the
// buffer r reads through) is empty: the read may block, and what is
// already in w must reach the other side first.
type flushingReader struct {
	r       io.Reader
	pending *bufio.Reader
	w       *bufio.Writer
}

func (f *flushingReader) Read(p []byte) (int, error) {
	if f.pending.Buffered() == 0 && f.w.Buffered() > 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.r.Read(p)
}

func (f *flushingReader) Close() error {
	if c, ok := f.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// byteWriter hides bufio.Writer's ReadFrom: a flushingReader must not
// flush the buffer ReadFrom is filling. WriteByte keeps Request.Write from
// adding a buffer of its own.
type byteWriter struct{ w *bufio.Writer }

func (b byteWriter) Write(p []byte) (int, error) { return b.w.Write(p) }
func (b byteWriter) WriteByte(c byte) error      { return b.w.WriteByte(c) }

// countingConn reports the bytes read from (sent by the program) and
// written to (received by it) the program's connection.
type countingConn struct {
	net.Conn
	mu    sync.Mutex
	count func(sent, recv int64)
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.add(int64(n), 0)
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.add(0, int64(n))
	return n, err
}

func (c *countingConn) add(sent, recv int64) {
	if c.count == nil || sent == 0 && recv == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count(sent, recv)
}
