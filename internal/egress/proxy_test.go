package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// proxyClient is an HTTP client that uses the capture's explicit proxy and
// trusts the upstreams' test CA.
func (u *upstreams) proxyClient(c *testCapture) *http.Client {
	proxy, _ := url.Parse("http://" + c.proxyAddr)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:             http.ProxyURL(proxy),
		TLSClientConfig:   &tls.Config{RootCAs: u.ca.pool},
		DisableKeepAlives: true,
	}}
}

// fetch GETs url and returns the status and body.
func fetch(t *testing.T, client *http.Client, url string) (int, string, error) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// record closes b and returns its final audit with byte counts replaced
// by whether any bytes moved (exact counts depend on TLS and headers).
func record(b *Binding) []Entry {
	b.Close()
	out := b.Record()
	for i := range out {
		out[i].BytesSent = min(out[i].BytesSent, 1)
		out[i].BytesReceived = min(out[i].BytesReceived, 1)
	}
	return out
}

func TestProxyTunnelAndPlainForward(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, b, c := serve(t, cfg, cfg.Ceiling)
	client := u.proxyClient(c)

	for _, url := range []string{"https://" + u.tlsOrigin + "/", "http://" + u.plainOrigin + "/", "https://www." + u.tlsOrigin + "/"} {
		status, body, err := fetch(t, client, url)
		host := strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
		if err != nil || status != 200 || body != "hello from "+strings.TrimSuffix(host, "/") {
			t.Errorf("GET %s through the proxy = %d %q, %v", url, status, body, err)
		}
	}
	want := []Entry{
		{Host: "plain.test", Port: u.plainPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1},
		{Host: "tls.test", Port: u.tlsPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1},
		{Host: "www.tls.test", Port: u.tlsPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1},
	}
	if diff := cmp.Diff(want, record(b)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func TestProxyDeniesFast(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	tlsPort, plainPort := strconv.Itoa(u.tlsPort), strconv.Itoa(u.plainPort)
	_, b, c := serve(t, cfg, cfg.Ceiling)
	tests := []struct {
		url, reason, says string
	}{
		{"https://denied.test/", ReasonNotInPolicy, "network.allow"},
		{"http://denied.test:8080/x", ReasonNotInPolicy, "CODEXEC_EGRESS_ALLOW"},
		{"https://tls.test:1/", ReasonNotInPolicy, "tls.test:1"},
		{"https://localhost:" + tlsPort + "/", ReasonPrivate, "CODEXEC_EGRESS_RESOLVE"},
		{"https://127.0.0.1:" + tlsPort + "/", ReasonIPLiteral, "IP address"},
	}
	for _, tt := range tests {
		start := time.Now()
		status, body := connectStatus(t, c, tt.url)
		if status != http.StatusForbidden || !strings.Contains(body, tt.says) {
			t.Errorf("%s: %d %q, want 403 saying %q", tt.url, status, body, tt.says)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: denial took %v", tt.url, d)
		}
	}
	// An address a rule names is allowed as a literal.
	if status, body, err := fetch(t, u.proxyClient(c), "http://127.0.0.1:"+plainPort+"/"); err != nil || status != 200 {
		t.Errorf("GET of an IP literal a rule names = %d %q, %v", status, body, err)
	}
	want := []Entry{
		{Host: "127.0.0.1", Port: u.plainPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1},
		{Host: "127.0.0.1", Port: u.tlsPort, Reason: ReasonIPLiteral, Connections: 1},
		{Host: "denied.test", Port: 443, Reason: ReasonNotInPolicy, Connections: 1},
		{Host: "denied.test", Port: 8080, Reason: ReasonNotInPolicy, Connections: 1},
		{Host: "localhost", Port: u.tlsPort, Reason: ReasonPrivate, Connections: 1},
		{Host: "tls.test", Port: 1, Reason: ReasonNotInPolicy, Connections: 1},
	}
	if diff := cmp.Diff(want, record(b), sortEntries); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

// sortEntries compares audits in Record's order.
var sortEntries = cmpopts.SortSlices(func(a, b Entry) bool {
	return a.Host < b.Host || a.Host == b.Host && a.Port < b.Port
})

// connectStatus sends what a client sends the proxy for url (CONNECT for
// https, an absolute-form GET for http) and returns the status and body.
func connectStatus(t *testing.T, c *testCapture, rawURL string) (int, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn := dialProxy(t, c)
	if u.Scheme == "https" {
		host := u.Host
		if u.Port() == "" {
			host += ":443"
		}
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
	} else {
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", rawURL, u.Host)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: reading the proxy's answer: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// openTunnel sends CONNECT target and returns the connection after the
// proxy's answer, and its status.
func openTunnel(t *testing.T, c *testCapture, target string) (net.Conn, int) {
	t.Helper()
	conn := dialProxy(t, c)
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if br.Buffered() > 0 {
		t.Fatalf("CONNECT %s: unexpected bytes after the answer", target)
	}
	return conn, resp.StatusCode
}

func TestProxyRefusesSNIMismatch(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, b, c := serve(t, cfg, cfg.Ceiling)
	// www.tls.test is allowed and its certificate valid: only the SNI
	// differs from the CONNECT host, which is what must be refused.
	for _, sni := range []string{"www.tls.test", ""} {
		conn, status := openTunnel(t, c, u.tlsOrigin)
		if status != 200 {
			t.Fatalf("CONNECT %s = %d", u.tlsOrigin, status)
		}
		cfg := &tls.Config{ServerName: sni, RootCAs: u.ca.pool, InsecureSkipVerify: sni == ""}
		if err := tls.Client(conn, cfg).Handshake(); err == nil {
			t.Errorf("TLS with SNI %q through CONNECT %s succeeded", sni, u.tlsOrigin)
		}
	}
	want := []Entry{{Host: "tls.test", Port: u.tlsPort, Reason: ReasonSNI, Connections: 2}}
	if diff := cmp.Diff(want, record(b)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func TestSetPolicyAppliesToNextConnection(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, b, c := serve(t, cfg, cfg.Ceiling)
	held, status := openTunnel(t, c, u.tlsOrigin)
	if status != 200 {
		t.Fatalf("CONNECT = %d", status)
	}
	b.SetPolicy(mustPolicy(t, u.plainOrigin))
	if status, _ := connectStatus(t, c, "https://"+u.tlsOrigin+"/"); status != http.StatusForbidden {
		t.Errorf("CONNECT after the policy dropped the host = %d, want 403", status)
	}
	if status, _, err := fetch(t, u.proxyClient(c), "http://"+u.plainOrigin+"/"); err != nil || status != 200 {
		t.Errorf("GET of the host the new policy allows = %d, %v", status, err)
	}
	// The tunnel opened before the change keeps working.
	tc := tls.Client(held, &tls.Config{ServerName: "tls.test", RootCAs: u.ca.pool})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: tls.test\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("request on the tunnel opened before SetPolicy: %v", err)
	}
}

func TestLimitOpenConnections(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	cfg.Limits = Limits{MaxOpenConns: 2}
	_, b, c := serve(t, cfg, cfg.Ceiling)
	for i := 0; i < 2; i++ {
		if _, status := openTunnel(t, c, u.tlsOrigin); status != 200 {
			t.Fatalf("tunnel %d: %d", i, status)
		}
	}
	status, body := connectStatus(t, c, "https://"+u.tlsOrigin+"/")
	if status != http.StatusForbidden || !strings.Contains(body, "limit") {
		t.Errorf("third open connection = %d %q, want 403 naming the limit", status, body)
	}
	got := record(b)
	if len(got) != 1 || got[0].Reason != ReasonLimit || got[0].Connections != 3 {
		t.Errorf("audit = %+v, want one entry with 3 connections and reason %q", got, ReasonLimit)
	}
}

func TestLimitTotalConnectionsAndBytes(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	cfg.Limits = Limits{MaxConns: 3, MaxBytes: 256 << 10}
	_, b, c := serve(t, cfg, cfg.Ceiling)
	client := u.proxyClient(c)
	if _, _, err := fetch(t, client, "http://"+u.plainOrigin+"/?n=1048576"); err == nil {
		t.Error("a 1 MiB download within a 256 KiB byte limit completed")
	}
	// The byte limit is spent: the next connection is refused too.
	if status, body := connectStatus(t, c, "http://"+u.plainOrigin+"/"); status != http.StatusForbidden || !strings.Contains(body, "limit") {
		t.Errorf("after the byte limit: %d %q", status, body)
	}
	got := record(b)
	if len(got) != 1 || got[0].Reason != ReasonLimit || got[0].BytesReceived > 512<<10 {
		t.Errorf("audit = %+v, want the cut download with reason %q", got, ReasonLimit)
	}

	_, b, c = serve(t, cfg, cfg.Ceiling)
	client = u.proxyClient(c)
	for i := 0; i < 3; i++ {
		if status, _, err := fetch(t, client, "http://"+u.plainOrigin+"/"); err != nil || status != 200 {
			t.Fatalf("request %d within the limit: %d %v", i, status, err)
		}
	}
	if status, body := connectStatus(t, c, "http://"+u.plainOrigin+"/"); status != http.StatusForbidden || !strings.Contains(body, "limit") {
		t.Errorf("fourth connection of a run limited to three: %d %q", status, body)
	}
}

func TestCloseEndsOpenConnections(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, b, c := serve(t, cfg, cfg.Ceiling)
	held, status := openTunnel(t, c, u.tlsOrigin)
	if status != 200 {
		t.Fatalf("CONNECT = %d", status)
	}
	done := make(chan struct{})
	go func() { b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a tunnel open")
	}
	_ = held.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("read on a tunnel after Close: %v, want the connection ended", err)
	}
	if conn, err := net.DialTimeout("tcp", c.proxyAddr, time.Second); err == nil {
		conn.Close()
		t.Error("the proxy still accepts connections after Close")
	}
	if diff := cmp.Diff([]Entry{{Host: "tls.test", Port: u.tlsPort, Allowed: true, Connections: 1}}, b.Record(),
		cmpopts.IgnoreFields(Entry{}, "BytesSent", "BytesReceived")); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// silentUpstream accepts connections and never answers, holding them
// open; it returns its port.
func silentUpstream(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() })
		}
	}()
	return portOf(t, l.Addr())
}

func TestIdleTimeoutAndCloseWithSilentUpstream(t *testing.T) {
	u := startUpstreams(t)
	port := silentUpstream(t)
	cfg := u.config(t)
	target := "plain.test:" + strconv.Itoa(port)
	cfg.Ceiling.Allow = append(cfg.Ceiling.Allow, Rule{Host: "plain.test", Port: port})
	cfg.Limits = Limits{IdleTimeout: 300 * time.Millisecond}
	_, b, c := serve(t, cfg, cfg.Ceiling)

	idle, status := openTunnel(t, c, target)
	if status != 200 {
		t.Fatalf("CONNECT %s = %d", target, status)
	}
	fmt.Fprintf(idle, "hello\n") // not TLS: tunnelled as is
	start := time.Now()
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("an idle tunnel was not ended: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("idle tunnel ended after %v, limit 300ms", d)
	}

	cfg.Limits = Limits{}
	_, b, c = serve(t, cfg, cfg.Ceiling)
	held, _ := openTunnel(t, c, target)
	fmt.Fprintf(held, "hello\n")
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	b.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a tunnel to a silent upstream", d)
	}
}

func TestStatsCountWithoutHosts(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	s, b, c := serve(t, cfg, cfg.Ceiling)
	if _, _, err := fetch(t, u.proxyClient(c), "http://"+u.plainOrigin+"/"); err != nil {
		t.Fatal(err)
	}
	connectStatus(t, c, "https://denied.test/")
	connectStatus(t, c, "https://other.test/")
	b.Close()
	if allowed, denied := s.Stats(); allowed != 1 || denied != 2 {
		t.Errorf("Stats = %d allowed, %d denied; want 1, 2", allowed, denied)
	}
}

func TestPlainProxyConnectionServesSeveralHosts(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, b, c := serve(t, cfg, cfg.Ceiling)
	conn := dialProxy(t, c)
	br := bufio.NewReader(conn)
	ip := "127.0.0.1:" + strconv.Itoa(u.plainPort)
	for _, origin := range []string{u.plainOrigin, u.plainOrigin, ip, "denied.test"} {
		fmt.Fprintf(conn, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin, origin)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("GET http://%s/ on a shared proxy connection: %v", origin, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := map[bool]int{true: http.StatusForbidden, false: 200}[origin == "denied.test"]
		if resp.StatusCode != want {
			t.Errorf("GET http://%s/ = %d %q, want %d", origin, resp.StatusCode, body, want)
		}
	}
	got := b.Record()
	want := []Entry{
		{Host: "127.0.0.1", Port: u.plainPort, Allowed: true, Connections: 1},
		{Host: "denied.test", Port: 80, Reason: ReasonNotInPolicy, Connections: 1},
		{Host: "plain.test", Port: u.plainPort, Allowed: true, Connections: 1},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Entry{}, "BytesSent", "BytesReceived")); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	// Each host's bytes are its own requests and responses: the two
	// requests to plain.test sent about twice what the one to the IP did.
	if len(got) == 3 && (got[2].BytesSent < got[0].BytesSent || got[0].BytesSent == 0 || got[2].BytesReceived < got[0].BytesReceived) {
		t.Errorf("bytes not attributed per host: %+v", got)
	}
}

func TestPlainProxyRelaysUpgrades(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, _, c := serve(t, cfg, cfg.Ceiling)
	conn := dialProxy(t, c)
	fmt.Fprintf(conn, "GET http://%s/upgrade HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", u.plainOrigin, u.plainOrigin)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the proxy: %v %v", resp, err)
	}
	fmt.Fprintf(conn, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Errorf("after the upgrade, echo = %q, %v", line, err)
	}
}

func TestProxyBoundsRequestHead(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, _, c := serve(t, cfg, cfg.Ceiling)
	conn := dialProxy(t, c)
	go func() {
		fmt.Fprintf(conn, "GET http://%s/ HTTP/1.1\r\nX-Big: %s", u.plainOrigin, strings.Repeat("a", 1<<20))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 1 MiB request head: %v %v, want 431", resp, err)
	}
}

// dialProxy connects to c's explicit proxy, closed when the test ends, with
// every read and write bounded so a proxy that never answers fails the
// test instead of hanging it.
func dialProxy(t testing.TB, c *testCapture) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", c.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	return conn
}
