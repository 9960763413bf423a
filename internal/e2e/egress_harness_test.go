package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The upstreams of the egress tests: loopback servers started by the
// test, reached by name through CODEXEC_EGRESS_RESOLVE pins. api and evil
// share one HTTPS server (a certificate for both names, from a CA of the
// test's own given to the server by CODEXEC_EGRESS_CA_FILE); plain is
// plain HTTP. Nothing leaves the machine.
const (
	apiHost   = "api.test.example"
	evilHost  = "evil.test.example"
	plainHost = "plain.test.example"
	// secretValue is the credential only the proxy and the upstream may
	// ever hold.
	secretValue = "Bearer e2e-s3cret-9f3a1c"
)

// egressNet is one test's upstreams and the server settings that reach
// them.
type egressNet struct {
	tlsSrv, plainSrv   *httptest.Server
	tlsPort, plainPort string
	caFile             string
	mu                 sync.Mutex
	auth               map[string][]string // Authorization headers seen, by host
	wheel              []byte
	// noPythonTLS says why the sandbox's python cannot speak TLS ("": it can).
	noPythonTLS string
}

func newEgressNet(t testing.TB) *egressNet {
	t.Helper()
	n := &egressNet{auth: map[string][]string{}, wheel: tinyWheel(t)}
	caPEM, leaf := testCertificates(t, apiHost, evilHost)
	n.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(n.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	n.tlsSrv = httptest.NewUnstartedServer(http.HandlerFunc(n.serve))
	n.tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	n.tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	n.tlsSrv.StartTLS()
	n.plainSrv = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.tlsSrv.Close)
	t.Cleanup(n.plainSrv.Close)
	_, n.tlsPort, _ = net.SplitHostPort(n.tlsSrv.Listener.Addr().String())
	_, n.plainPort, _ = net.SplitHostPort(n.plainSrv.Listener.Addr().String())
	return n
}

// serve answers every upstream request: /hello says who it is, /redirect
// sends the client to evil, /simple/ and /files/ are a one-package index,
// /bytes/N streams N bytes; every Authorization header is recorded.
func (n *egressNet) serve(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	n.mu.Lock()
	if a := r.Header.Get("Authorization"); a != "" {
		n.auth[host] = append(n.auth[host], a)
	}
	n.mu.Unlock()
	switch {
	case r.URL.Path == "/redirect":
		http.Redirect(w, r, "https://"+evilHost+":"+n.tlsPort+"/hello", http.StatusFound)
	case r.URL.Path == "/simple/tinypkg/":
		fmt.Fprintf(w, `<html><body><a href="/files/tinypkg-1.0-py3-none-any.whl">tinypkg-1.0-py3-none-any.whl</a></body></html>`)
	case r.URL.Path == "/files/tinypkg-1.0-py3-none-any.whl":
		_, _ = w.Write(n.wheel)
	case strings.HasPrefix(r.URL.Path, "/bytes/"):
		var size int64
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/bytes/"), &size)
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = io.CopyN(w, zeros{}, size)
	default:
		fmt.Fprintf(w, "hello from %s\n", host)
	}
}

// authSeen is the Authorization headers host's upstream received.
func (n *egressNet) authSeen(host string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.auth[host]...)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// api, evil and plain are the upstreams' URLs by name.
func (n *egressNet) api(path string) string  { return "https://" + apiHost + ":" + n.tlsPort + path }
func (n *egressNet) evil(path string) string { return "https://" + evilHost + ":" + n.tlsPort + path }
func (n *egressNet) plain(path string) string {
	return "http://" + plainHost + ":" + n.plainPort + path
}

// rule is host with the port its upstream listens on.
func (n *egressNet) rule(host string) string {
	if host == plainHost {
		return host + ":" + n.plainPort
	}
	return host + ":" + n.tlsPort
}

// env is the server environment: a ceiling of api, evil, plain and
// localhost (so that a private address can be asked for), the pins, the
// test CA, and extra settings.
func (n *egressNet) env(extra ...string) []string {
	ceiling := strings.Join([]string{n.rule(apiHost), n.rule(evilHost), n.rule(plainHost), "localhost:" + n.tlsPort}, ",")
	pins := apiHost + "=127.0.0.1," + evilHost + "=127.0.0.1," + plainHost + "=127.0.0.1"
	return append([]string{"CODEXEC_EGRESS_ALLOW=" + ceiling, "CODEXEC_EGRESS_RESOLVE=" + pins, "CODEXEC_EGRESS_CA_FILE=" + n.caFile}, extra...)
}

// allow is a network argument.
func allow(rules ...string) map[string]any { return map[string]any{"allow": rules} }

// testCertificates makes a CA and a leaf for names signed by it.
func testCertificates(t testing.TB, names ...string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "codexec e2e test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tinyWheel is a wheel of package tinypkg 1.0 (tinypkg.VALUE = 42).
func tinyWheel(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	files := []struct{ name, body string }{
		{"tinypkg/__init__.py", "VALUE = 42\n"},
		{"tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n"},
		{"tinypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: codexec-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"tinypkg-1.0.dist-info/RECORD", "tinypkg/__init__.py,,\ntinypkg-1.0.dist-info/METADATA,,\ntinypkg-1.0.dist-info/WHEEL,,\ntinypkg-1.0.dist-info/RECORD,,\n"},
	}
	for _, f := range files {
		w, err := z.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f.body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// netResult is execute_code's result with the network audit.
type netResult struct {
	execResult
	Network []struct {
		Host          string `json:"host"`
		Port          int    `json:"port"`
		Allowed       bool   `json:"allowed"`
		Reason        string `json:"reason"`
		Connections   int    `json:"connections"`
		BytesSent     int64  `json:"bytes_sent"`
		BytesReceived int64  `json:"bytes_received"`
		Intercepted   bool   `json:"intercepted"`
	} `json:"network"`
	NetworkMode string `json:"network_mode"`
}

// audit is the result's entry for host ("" fields when absent).
func (r netResult) audit(host string) (allowed bool, reason string, conns int) {
	for _, e := range r.Network {
		if e.Host == host {
			return e.Allowed, e.Reason, e.Connections
		}
	}
	return false, "", 0
}

// execNet runs code in lang with network (nil: none) and decodes the
// result.
func (s *server) execNet(lang, code string, network map[string]any) (netResult, time.Duration) {
	s.t.Helper()
	args := map[string]any{"language": lang, "code": code, "timeout_ms": 60000}
	if network != nil {
		args["network"] = network
	}
	var r netResult
	t0 := time.Now()
	s.callInto("execute_code", args, &r)
	return r, time.Since(t0)
}

// requireEgress skips the test when this server's sandbox does not
// capture a run's network (a build or mode without it): a run given
// network cannot even reach its proxy port.
func requireEgress(t *testing.T, s *server, n *egressNet) {
	t.Helper()
	r, _ := s.execNet("python", "import socket\ntry:\n  socket.create_connection(('127.0.0.1', 3128), timeout=5).close(); print('proxy reachable')\nexcept OSError as e:\n  print('no proxy:', e)",
		allow(n.rule(apiHost)))
	if !strings.Contains(r.Stdout, "proxy reachable") {
		t.Skipf("this server's sandbox does not capture a run's network (egress unavailable in this build or mode): %s%s", r.Stdout, r.Stderr)
	}
	// Most tests speak HTTPS from python; a minimal image's python may
	// have been built without its ssl module.
	if r, _ := s.execNet("python", "import ssl; print('tls ok')", nil); !strings.Contains(r.Stdout, "tls ok") {
		n.noPythonTLS = "python in this sandbox cannot speak TLS (no ssl module)"
	}
}

// needPythonTLS skips a test that speaks HTTPS from python where the
// sandbox's python cannot.
func (n *egressNet) needPythonTLS(t *testing.T) {
	t.Helper()
	if n.noPythonTLS != "" {
		t.Skip(n.noPythonTLS)
	}
}

// credentialsUnavailable says why this build cannot load a credentials
// file (the server refuses to start with one), or "".
func credentialsUnavailable(t testing.TB, env []string) string {
	t.Helper()
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "CODEXEC_DATA_DIR=" + t.TempDir()}, env...)
	cmd.Stdin = strings.NewReader("")
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "not available in this build") {
		return "credentials are not available in this build: " + strings.TrimSpace(tail(string(out), 300))
	}
	return ""
}

// credentialEnv is the server environment of n with a credential for api
// (header Authorization, placeholder API_TOKEN).
func (n *egressNet) credentialEnv(t testing.TB) []string {
	t.Helper()
	creds := filepath.Join(t.TempDir(), "credentials.yaml")
	body := fmt.Sprintf("credentials:\n  - host: %s\n    header: Authorization\n    value_env: E2E_API_AUTH\n    placeholder: API_TOKEN\n", n.rule(apiHost))
	if err := os.WriteFile(creds, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return n.env("CODEXEC_EGRESS_CREDENTIALS="+creds, "E2E_API_AUTH="+secretValue)
}
