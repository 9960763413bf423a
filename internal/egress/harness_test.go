package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
)

// testCA is a CA made for one test, with leaf certificates for names.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool,
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf issues a server certificate for names.
func (ca *testCA) leaf(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// upstreams are the servers a test reaches through the proxy: plain
// HTTP as plain.test and HTTPS as tls.test (and www.tls.test), both on
// loopback and reached by pins.
type upstreams struct {
	ca          *testCA
	plain, tls  *httptest.Server
	plainPort   int
	tlsPort     int
	plainOrigin string // "plain.test:port"
	tlsOrigin   string // "tls.test:port"
}

// echoHandler answers with the Host it was asked for, the Authorization
// header it got (/auth), or n bytes (?n=); /upgrade switches to echo.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/upgrade" {
		echoUpgraded(w)
		return
	}
	if r.URL.Path == "/auth" {
		_, _ = w.Write([]byte("authorization=" + r.Header.Get("Authorization")))
		return
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("n")); err == nil {
		w.Header().Set("Content-Length", strconv.Itoa(n))
		buf := make([]byte, 32<<10)
		for n > 0 {
			k := min(n, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
		return
	}
	_, _ = w.Write([]byte("hello from " + r.Host))
}

// echoUpgraded switches the connection to a protocol that echoes bytes.
func echoUpgraded(w http.ResponseWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
	_ = rw.Flush()
	_, _ = io.Copy(conn, rw)
}

func startUpstreams(t testing.TB) *upstreams {
	t.Helper()
	ca := newTestCA(t)
	plain := httptest.NewServer(http.HandlerFunc(echoHandler))
	t.Cleanup(plain.Close)
	secure := httptest.NewUnstartedServer(http.HandlerFunc(echoHandler))
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{ca.leaf(t, "tls.test", "www.tls.test")}}
	secure.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point of some tests
	secure.StartTLS()
	t.Cleanup(secure.Close)
	u := &upstreams{ca: ca, plain: plain, tls: secure,
		plainPort: portOf(t, plain.Listener.Addr()), tlsPort: portOf(t, secure.Listener.Addr())}
	u.plainOrigin = "plain.test:" + strconv.Itoa(u.plainPort)
	u.tlsOrigin = "tls.test:" + strconv.Itoa(u.tlsPort)
	return u
}

func portOf(t testing.TB, a net.Addr) int {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return int(ap.Port())
}

// config is a Config whose ceiling allows both upstreams (and localhost
// on the TLS port, without a pin) and pins their names to loopback.
func (u *upstreams) config(t testing.TB) Config {
	t.Helper()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, u.ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	loop := netip.MustParseAddr("127.0.0.1")
	return Config{
		Ceiling: mustPolicy(t, u.plainOrigin+","+u.tlsOrigin+",*.tls.test:"+strconv.Itoa(u.tlsPort)+
			",localhost:"+strconv.Itoa(u.tlsPort)+",127.0.0.1:"+strconv.Itoa(u.plainPort)),
		Pins:     map[string]netip.Addr{"plain.test": loop, "tls.test": loop, "www.tls.test": loop},
		CAFile:   caFile,
		StateDir: t.TempDir(),
	}
}

// testCapture stands in for the sockets a backend makes in a sandbox:
// the proxy and DNS on 127.0.0.1, transparent listeners on the first stub
// addresses (127.64.0.1, .2, …) with the given ports.
type testCapture struct {
	*sandbox.Capture
	proxyAddr, dnsAddr string
}

func newTestCapture(t testing.TB, stubPorts ...int) *testCapture {
	t.Helper()
	c := &sandbox.Capture{Ports: map[int]net.Listener{}}
	var err error
	if c.Proxy, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	c.DNS, c.DNSTCP = listenDNS(t)
	dnsAddr := c.DNS.LocalAddr().String()
	stub := netip.MustParseAddr("127.64.0.1")
	for _, port := range stubPorts {
		l, err := net.Listen("tcp", netip.AddrPortFrom(stub, uint16(port)).String())
		if err != nil {
			t.Skipf("cannot listen on stub address %s (loopback /8 not routed here?): %v", stub, err)
		}
		c.Ports[port] = l
		stub = stub.Next()
	}
	t.Cleanup(func() { _ = c.Close() })
	return &testCapture{Capture: c, proxyAddr: c.Proxy.Addr().String(), dnsAddr: dnsAddr}
}

// listenDNS listens on one loopback port for UDP and TCP, as the DNS stub
// does in a sandbox (a free UDP port may be taken for TCP: try another).
func listenDNS(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	for try := 0; try < 20; try++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l
		}
		pc.Close()
	}
	t.Fatal("no loopback port free for both UDP and TCP")
	return nil, nil
}

// serve starts a service for cfg and a binding with policy p on a fresh
// capture.
func serve(t testing.TB, cfg Config, p Policy, stubPorts ...int) (*Service, *Binding, *testCapture) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Bind("exec_test", "alice", p)
	c := newTestCapture(t, stubPorts...)
	b.Serve(c.Capture)
	t.Cleanup(b.Close)
	return s, b, c
}
