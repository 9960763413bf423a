package intercept

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The upstream is a real TLS server (httptest's certificate is valid for
// example.com); the program is a real HTTP client that trusts only the
// interception CA and reaches intercept through a loopback socket.

const upstreamHost = "example.com"

var testCred = &Credential{Header: "Authorization", Placeholder: "codexec-placeholder-0123456789abcdef", Value: credValue}

const credValue = "real-token-value"

// upstreamHandler echoes request headers (/echo), sends n bytes (/bytes?n=,
// with a length, or chunked with &chunked=1), hashes an upload (/upload),
// and trickles (/trickle: one line, then another once release is closed).
func upstreamHandler(release chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("X-Seen-Host", r.Host)
		_ = json.NewEncoder(w).Encode(h)
	})
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		}
		buf := make([]byte, 64<<10)
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d %x %v", n, h.Sum(nil), r.TransferEncoding)
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprintln(w, "second")
	})
	return mux
}

// rig is one upstream, one authority and a loopback listener whose every
// connection is served by intercept.
type rig struct {
	upstream        *httptest.Server
	upstreamConns   atomic.Int64
	proxyConns      atomic.Int64
	sent, received  atomic.Int64
	client          *http.Client
	errs            chan error
	release         chan struct{}
	roots           *x509.CertPool
	programRoots    *x509.CertPool
	interceptListen net.Listener
}

func newRig(t testing.TB, trustUpstream bool) *rig {
	t.Helper()
	r := &rig{errs: make(chan error, 16), release: make(chan struct{})}
	r.upstream = httptest.NewUnstartedServer(upstreamHandler(r.release))
	r.upstream.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.upstreamConns.Add(1)
		}
	}
	r.upstream.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are what some tests do
	r.upstream.StartTLS()
	t.Cleanup(r.upstream.Close)
	// Before Close, which waits for every handler: a held trickle ends.
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
	})
	r.roots = x509.NewCertPool()
	if trustUpstream {
		r.roots.AddCert(r.upstream.Certificate())
	}
	a, err := NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := a.CertFor(upstreamHost)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.interceptListen = ln
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = ln.Close() })
	go r.serve(ctx, cert)
	programRoots := x509.NewCertPool()
	programRoots.AppendCertsFromPEM(a.PEM())
	r.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
		},
		TLSClientConfig:       &tls.Config{RootCAs: programRoots},
		DisableCompression:    true,
		ExpectContinueTimeout: time.Minute, // a body waits for "100 Continue" that long
	}}
	r.programRoots = programRoots
	t.Cleanup(r.client.CloseIdleConnections)
	return r
}

func (r *rig) serve(ctx context.Context, cert *tls.Certificate) {
	dial := func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", r.upstream.Listener.Addr().String())
	}
	count := func(sent, recv int64) { r.sent.Add(sent); r.received.Add(recv) }
	for {
		c, err := r.interceptListen.Accept()
		if err != nil {
			return
		}
		r.proxyConns.Add(1)
		go func() {
			r.errs <- Serve(ctx, c, upstreamHost, 443, testCred, cert, dial, r.roots, count)
		}()
	}
}

func (r *rig) get(t testing.TB, path string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+upstreamHost+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp
}

func (r *rig) echo(t *testing.T, header http.Header) http.Header {
	t.Helper()
	resp := r.get(t, "/echo", header)
	defer resp.Body.Close()
	var got http.Header
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("echo: %s, %v", resp.Status, err)
	}
	return got
}

func TestInterceptInjectsCredential(t *testing.T) {
	r := newRig(t, true)
	ph := testCred.Placeholder
	tests := []struct {
		name   string
		header http.Header
		want   map[string]string
	}{
		{"absent header is set", nil, map[string]string{"Authorization": credValue}},
		{"placeholder replaced, others untouched",
			http.Header{"Authorization": {"Bearer " + ph}, "X-Other": {"also " + ph}},
			map[string]string{"Authorization": "Bearer " + credValue, "X-Other": "also " + ph}},
		{"header without placeholder gets the credential",
			http.Header{"Authorization": {"Bearer chosen-by-program"}},
			map[string]string{"Authorization": credValue}},
		{"hop-by-hop headers stripped",
			http.Header{"Connection": {"X-Hop"}, "X-Hop": {"1"}, "Proxy-Authorization": {"Basic x"}, "Te": {"trailers"}},
			map[string]string{"Authorization": credValue, "X-Hop": "", "Proxy-Authorization": "", "Te": "", "Connection": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.echo(t, tt.header)
			if got.Get("X-Seen-Host") != upstreamHost {
				t.Errorf("upstream saw Host %q", got.Get("X-Seen-Host"))
			}
			for k, want := range tt.want {
				if v := strings.Join(got.Values(k), ", "); v != want {
					t.Errorf("upstream saw %s: %q; want %q", k, v, want)
				}
			}
		})
	}
	if p, u := r.proxyConns.Load(), r.upstreamConns.Load(); p != 1 || u != 1 {
		t.Errorf("%d requests used %d program connections and %d upstream connections; want one each (keep-alive)", len(tests), p, u)
	}
	if r.sent.Load() == 0 || r.received.Load() == 0 {
		t.Errorf("counted %d bytes sent, %d received", r.sent.Load(), r.received.Load())
	}
}

func TestInterceptStreamsLargeBodies(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 100 MiB")
	}
	r := newRig(t, true)
	const size = 100 << 20
	var peak atomic.Uint64
	stop := sampleHeap(&peak)
	resp := r.get(t, "/bytes?n="+strconv.Itoa(size), nil)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	base := stop()
	if err != nil || n != size {
		t.Fatalf("downloaded %d bytes, %v; want %d", n, err, size)
	}
	if grew := peak.Load() - min(base, peak.Load()); grew > 48<<20 {
		t.Errorf("the heap grew by %d MiB while streaming 100 MiB; the body was buffered", grew>>20)
	}
	if r.received.Load() < size {
		t.Errorf("counted %d bytes received; want at least %d", r.received.Load(), size)
	}
	resp = r.get(t, "/bytes?chunked=1&n=3000000", nil)
	n, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != 3000000 || resp.ContentLength != -1 {
		t.Errorf("chunked download: %d bytes (length %d), %v", n, resp.ContentLength, err)
	}
}

// sampleHeap records the largest heap seen until the returned function is
// called; that returns the heap at the start.
func sampleHeap(peak *atomic.Uint64) func() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return base }
}

func TestInterceptStreamsUploads(t *testing.T) {
	r := newRig(t, true)
	const size = 8 << 20
	payload := strings.Repeat("upload-", size/7+1)[:size]
	sum := sha256.Sum256([]byte(payload))
	for _, tt := range []struct {
		name   string
		body   io.Reader
		te     string
		expect bool
	}{
		{"content-length", strings.NewReader(payload), "[]", false},
		{"chunked", io.MultiReader(strings.NewReader(payload)), "[chunked]", false},
		{"expect 100-continue", strings.NewReader(payload), "[]", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "https://"+upstreamHost+"/upload", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.expect {
				req.Header.Set("Expect", "100-continue")
			}
			start := time.Now()
			resp, err := r.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if waited := time.Since(start); tt.expect && waited > 30*time.Second {
				t.Errorf("the upload waited %v: no 100 Continue came", waited)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("%d %s %s", size, hex.EncodeToString(sum[:]), tt.te); string(got) != want {
				t.Errorf("upstream got %q; want %q", got, want)
			}
		})
	}
}

func TestInterceptRelaysAsItComes(t *testing.T) {
	r := newRig(t, true)
	// The upstream sends the rest only once the first line arrived: a
	// proxy that holds back what it has (even the head) ends in the timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+upstreamHost+"/trickle", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("the head of a streamed response was held back: %v", err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	if s, err := lines.ReadString('\n'); s != "first\n" {
		t.Fatalf("first line %q, %v: the first part of a streamed response was held back until the rest came", s, err)
	}
	close(r.release)
	if rest, err := io.ReadAll(lines); err != nil || string(rest) != "second\n" {
		t.Errorf("rest %q, %v", rest, err)
	}
}

func TestInterceptRefusesOtherHost(t *testing.T) {
	r := newRig(t, true)
	req, err := http.NewRequest(http.MethodGet, "https://"+upstreamHost+"/echo", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example.net"
	req.Header.Set("Authorization", testCred.Placeholder)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "evil.example.net") {
		t.Errorf("got %s %q; want 403 naming the host", resp.Status, body)
	}
	if err := <-r.errs; !errors.Is(err, ErrHostMismatch) {
		t.Errorf("intercept returned %v; want ErrHostMismatch", err)
	}
	if n := r.upstreamConns.Load(); n != 0 {
		t.Errorf("the upstream was contacted %d times for a refused request", n)
	}
}

func TestInterceptUntrustedUpstream(t *testing.T) {
	r := newRig(t, false)
	resp := r.get(t, "/echo", nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "not signed by a trusted authority") {
		t.Errorf("got %s %q; want 502 saying the certificate is not trusted", resp.Status, body)
	}
	if strings.Contains(string(body), credValue) {
		t.Error("the 502 carries the credential")
	}
	if err := <-r.errs; !errors.Is(err, ErrUpstream) {
		t.Errorf("intercept returned %v; want ErrUpstream", err)
	}
}

func TestInterceptEndsWithContext(t *testing.T) {
	r := newRig(t, true)
	a, err := NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := a.CertFor(upstreamHost)
	program, proxy := net.Pipe()
	defer program.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, proxy, upstreamHost, 443, testCred, cert,
			func(context.Context) (net.Conn, error) { return nil, errors.New("unused") }, r.roots, nil)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("intercept kept waiting for the program's handshake after its context ended")
	}
}

// Throughput: the same 16 MiB download through interception and straight
// from the upstream, in one run (go test -bench Download -run '^$').
const benchSize = 16 << 20

func BenchmarkInterceptDownload(b *testing.B) {
	benchDownload(b, newRig(b, true).client)
}

func BenchmarkDirectDownload(b *testing.B) {
	r := newRig(b, true)
	direct := r.upstream.Client()
	direct.Transport.(*http.Transport).DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", r.upstream.Listener.Addr().String())
	}
	benchDownload(b, direct)
}

func benchDownload(b *testing.B, client *http.Client) {
	b.SetBytes(benchSize)
	for b.Loop() {
		resp, err := client.Get("https://" + upstreamHost + "/bytes?n=" + strconv.Itoa(benchSize))
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != benchSize {
			b.Fatalf("%d bytes, %v", n, err)
		}
	}
}

func TestInterceptRetriesOnClosedUpstream(t *testing.T) {
	r := newRig(t, true)
	r.echo(t, nil)
	// The upstream drops its idle connection; the next request is sent
	// again on a new one instead of failing.
	r.upstream.CloseClientConnections()
	got := r.echo(t, nil)
	if got.Get("Authorization") != credValue {
		t.Errorf("the retried request carried Authorization %q", got.Get("Authorization"))
	}
	if p, u := r.proxyConns.Load(), r.upstreamConns.Load(); p != 1 || u != 2 {
		t.Errorf("%d program connections, %d upstream; want 1 and 2", p, u)
	}
}

// rawExchange speaks HTTP over TLS to intercept by hand and returns all it
// sent back until it closed the connection.
func rawExchange(t *testing.T, r *rig, request string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", r.interceptListen.Addr().String(), &tls.Config{RootCAs: r.programRoots, ServerName: upstreamHost})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("read the answer: %v (so far %q)", err, got)
	}
	return string(got)
}

func TestInterceptRawRequests(t *testing.T) {
	r := newRig(t, true)
	tests := []struct {
		name, request string
		want, absent  []string
	}{
		{"HTTP/1.0 gets no chunks", "GET /bytes?chunked=1&n=5 HTTP/1.0\r\nHost: example.com\r\n\r\n",
			[]string{"HTTP/1.1 200 OK", "\r\n\r\n\x00\x00\x00\x00\x00"}, []string{"chunked"}},
		{"host with its port", "GET /bytes?n=1 HTTP/1.1\r\nHost: EXAMPLE.com:443\r\nConnection: close\r\n\r\n",
			[]string{"HTTP/1.1 200 OK", "Content-Length: 1"}, nil},
		{"host with another port", "GET /bytes?n=1 HTTP/1.1\r\nHost: example.com:8443\r\n\r\n",
			[]string{"HTTP/1.1 403 Forbidden", "example.com:8443"}, nil},
		{"no host", "GET /bytes?n=1 HTTP/1.1\r\n\r\n", []string{"HTTP/1.1 400 Bad Request"}, nil},
		{"absolute form names the host", "GET https://evil.example.net/echo HTTP/1.1\r\nHost: example.com\r\n\r\n",
			[]string{"HTTP/1.1 403 Forbidden", "evil.example.net"}, nil},
		{"malformed", "NOT HTTP\r\n\r\n", []string{"HTTP/1.1 400 Bad Request"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rawExchange(t, r, tt.request)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("answer %q lacks %q", got, w)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("answer %q has %q", got, a)
				}
			}
		})
	}
}
