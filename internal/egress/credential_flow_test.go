package egress

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestProxyInterceptsHostsWithCredentials checks the proxy's side of
// interception: a host with a credential is handed to it (and audited as
// intercepted), a host without one is tunnelled untouched.
func TestProxyInterceptsHostsWithCredentials(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	t.Setenv("EGRESS_TEST_AUTH", "Bearer the-secret")
	cfg.Credentials = []Credential{{Host: Rule{Host: "tls.test"}, Header: "Authorization", ValueEnv: "EGRESS_TEST_AUTH", Placeholder: "TEST_TOKEN"}}
	cfg.Credentials[0].Host.Port = u.tlsPort
	s, b, c := serve(t, cfg, cfg.Ceiling)
	if _, err := s.ca.certFor("tls.test"); err != nil {
		t.Skipf("interception is not part of this build: %v", err)
	}
	// The sandbox trusts codexec's CA (for intercepted hosts) and the
	// test CA (for tunnelled ones), as the bundle Capture writes does.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.ca.PEM())
	roots.AppendCertsFromPEM(u.ca.pem)
	proxy, _ := url.Parse("http://" + c.proxyAddr)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true,
	}}
	for url, want := range map[string]string{
		"https://" + u.tlsOrigin + "/auth":     "authorization=Bearer the-secret",
		"https://www." + u.tlsOrigin + "/auth": "authorization=",
	} {
		status, body, err := fetch(t, client, url)
		if err != nil || status != 200 || body != want {
			t.Errorf("GET %s = %d %q, %v; want %q", url, status, body, err, want)
		}
	}
	want := []Entry{
		{Host: "tls.test", Port: u.tlsPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1, Intercepted: true},
		{Host: "www.tls.test", Port: u.tlsPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1},
	}
	if diff := cmp.Diff(want, record(b)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}
