package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

// lookup asks the capture's DNS stub for name/qtype over net ("udp" or
// "tcp") and returns the rcode and the A answers.
func lookup(t *testing.T, c *testCapture, network, name string, qtype uint16) (int, []string) {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	client := &dns.Client{Net: network, Timeout: 5 * time.Second}
	r, _, err := client.Exchange(q, c.dnsAddr)
	if err != nil {
		t.Fatalf("DNS %s %s over %s: %v", dns.TypeToString[qtype], name, network, err)
	}
	var addrs []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			addrs = append(addrs, a.A.String())
		}
	}
	return r.Rcode, addrs
}

func TestDNSStub(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, b, c := serve(t, cfg, cfg.Ceiling)
	type answer struct {
		Rcode int
		Addrs []string
	}
	tests := []struct {
		network, name string
		qtype         uint16
		want          answer
	}{
		{"udp", "tls.test", dns.TypeA, answer{dns.RcodeSuccess, []string{"127.64.0.1"}}},
		{"udp", "TLS.test", dns.TypeA, answer{dns.RcodeSuccess, []string{"127.64.0.1"}}},
		{"tcp", "plain.test", dns.TypeA, answer{dns.RcodeSuccess, []string{"127.64.0.2"}}},
		{"udp", "a.b.tls.test", dns.TypeA, answer{dns.RcodeSuccess, []string{"127.64.0.3"}}},
		{"tcp", "tls.test", dns.TypeA, answer{dns.RcodeSuccess, []string{"127.64.0.1"}}},
		{"udp", "tls.test", dns.TypeAAAA, answer{Rcode: dns.RcodeSuccess}},
		{"udp", "tls.test", dns.TypeTXT, answer{Rcode: dns.RcodeSuccess}},
		{"udp", "denied.test", dns.TypeA, answer{Rcode: dns.RcodeNameError}},
		{"tcp", "denied.test", dns.TypeAAAA, answer{Rcode: dns.RcodeNameError}},
		{"udp", "test", dns.TypeA, answer{Rcode: dns.RcodeNameError}},
		{"udp", "127.0.0.1", dns.TypeA, answer{Rcode: dns.RcodeNameError}},
	}
	for _, tt := range tests {
		rcode, addrs := lookup(t, c, tt.network, tt.name, tt.qtype)
		if diff := cmp.Diff(tt.want, answer{rcode, addrs}); diff != "" {
			t.Errorf("%s %s over %s (-want +got):\n%s", dns.TypeToString[tt.qtype], tt.name, tt.network, diff)
		}
	}
	var refused []Entry
	for _, e := range b.Record() {
		if e.Reason == ReasonLookup {
			refused = append(refused, e)
		}
	}
	want := []Entry{{Host: "denied.test", Reason: ReasonLookup}, {Host: "test", Reason: ReasonLookup}}
	if diff := cmp.Diff(want, refused); diff != "" {
		t.Errorf("refused lookups in the audit (-want +got):\n%s", diff)
	}
	b.SetPolicy(Policy{})
	if rcode, _ := lookup(t, c, "udp", "tls.test", dns.TypeA); rcode != dns.RcodeNameError {
		t.Errorf("after SetPolicy(none), A tls.test rcode = %s, want NXDOMAIN", dns.RcodeToString[rcode])
	}
}

func TestDNSStubDenyAll(t *testing.T) {
	u := startUpstreams(t)
	_, _, c := serve(t, u.config(t), Policy{})
	if rcode, addrs := lookup(t, c, "udp", "tls.test", dns.TypeA); rcode != dns.RcodeNameError || addrs != nil {
		t.Errorf("a binding that allows nothing answered %s %v, want NXDOMAIN", dns.RcodeToString[rcode], addrs)
	}
	// Not a query: not implemented, and no answer is invented.
	q := new(dns.Msg)
	q.SetNotify("tls.test.")
	r, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(q, c.dnsAddr)
	if err != nil || r.Rcode != dns.RcodeNotImplemented {
		t.Errorf("NOTIFY: %v %v, want NOTIMP", r, err)
	}
}

func TestTransparentCapture(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	_, b, c := serve(t, cfg, cfg.Ceiling, u.tlsPort, u.plainPort)
	tlsStub := "127.64.0.1:" + strconv.Itoa(u.tlsPort)
	plainStub := "127.64.0.2:" + strconv.Itoa(u.plainPort)

	// Before any lookup the stub address stands for no name: refused.
	if conn, err := net.Dial("tcp", tlsStub); err == nil {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("a connection to an address no name was given stayed open: %v", err)
		}
		conn.Close()
	}
	lookup(t, c, "udp", "tls.test", dns.TypeA)
	lookup(t, c, "udp", "plain.test", dns.TypeA)

	direct := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: u.ca.pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			stub := map[string]string{u.tlsOrigin: tlsStub, u.plainOrigin: plainStub}[addr]
			return (&net.Dialer{}).DialContext(ctx, network, stub)
		},
	}}
	for _, url := range []string{"https://" + u.tlsOrigin + "/", "http://" + u.plainOrigin + "/"} {
		status, body, err := fetch(t, direct, url)
		if err != nil || status != 200 || !strings.HasPrefix(body, "hello from ") {
			t.Errorf("GET %s by its stub address = %d %q, %v", url, status, body, err)
		}
	}
	// Plain HTTP must name the host its address stands for.
	conn, err := net.Dial("tcp", plainStub)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("plain request with another Host header: %v %v, want 403", resp, err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "other.test") {
			t.Errorf("403 body %q does not name the Host header", body)
		}
	}
	conn.Close()

	want := []Entry{
		{Host: "127.64.0.1", Port: u.tlsPort, Reason: ReasonNoName, Connections: 1},
		{Host: "plain.test", Port: u.plainPort, Allowed: true, Reason: ReasonHostHeader, Connections: 2, BytesSent: 1, BytesReceived: 1},
		{Host: "tls.test", Port: u.tlsPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1},
	}
	if diff := cmp.Diff(want, record(b)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func TestTransparentDest(t *testing.T) {
	b := &Binding{names: newStubNames()}
	named, _ := b.names.addrFor("api.example.com")
	tests := []struct {
		local string
		want  dest
		ok    bool
	}{
		{named.String() + ":443", dest{"api.example.com", 443}, true},
		{"127.64.0.9:443", dest{"127.64.0.9", 443}, false},
		{"127.0.0.1:443", dest{"127.0.0.1", 443}, false},
		{"10.0.0.7:5432", dest{"10.0.0.7", 5432}, true},
		{"[::ffff:10.0.0.7]:5432", dest{"10.0.0.7", 5432}, true},
	}
	for _, tt := range tests {
		got, ok := b.transparentDest(netip.MustParseAddrPort(tt.local))
		if got != tt.want || ok != tt.ok {
			t.Errorf("transparentDest(%s) = %v, %v; want %v, %v", tt.local, got, ok, tt.want, tt.ok)
		}
	}
}

// TestDNSLookupAuditBounded: refused lookups are audited once per name,
// and a program looking up endless names adds at most maxLookupEntries.
func TestDNSLookupAuditBounded(t *testing.T) {
	u := startUpstreams(t)
	_, b, c := serve(t, u.config(t), Policy{})
	for i := range maxLookupEntries + 20 {
		name := fmt.Sprintf("n%d.exfil.test", i)
		lookup(t, c, "udp", name, dns.TypeA)
		lookup(t, c, "udp", name, dns.TypeA)
	}
	got := b.Record()
	if len(got) != maxLookupEntries {
		t.Fatalf("%d audit entries after %d distinct refused names, want %d", len(got), maxLookupEntries+20, maxLookupEntries)
	}
	for _, e := range got {
		if e.Reason != ReasonLookup || e.Port != 0 || e.Connections != 0 || e.Allowed {
			t.Errorf("entry %+v: want a refused lookup without connections", e)
		}
	}
}
