package egress

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	if _, err := s.ca.CertFor("tls.test"); err != nil {
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
	// The placeholder sent to a host without the credential stays as is.
	placeholder := placeholderValue(cfg.Credentials[0])
	req, _ := http.NewRequest(http.MethodGet, "https://www."+u.tlsOrigin+"/auth", nil)
	req.Header.Set("Authorization", "Bearer "+placeholder)
	if resp, err := client.Do(req); err != nil {
		t.Error(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "authorization=Bearer "+placeholder {
			t.Errorf("a placeholder sent to a host without its credential arrived as %q", body)
		}
	}
	want := []Entry{
		{Host: "tls.test", Port: u.tlsPort, Allowed: true, Connections: 1, BytesSent: 1, BytesReceived: 1, Intercepted: true},
		{Host: "www.tls.test", Port: u.tlsPort, Allowed: true, Connections: 2, BytesSent: 1, BytesReceived: 1},
	}
	if diff := cmp.Diff(want, record(b)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

// TestProxyCredentialOnlyForItsPrincipals: a run of a principal the
// credential does not name is tunnelled, never given the value.
func TestProxyCredentialOnlyForItsPrincipals(t *testing.T) {
	u := startUpstreams(t)
	cfg := u.config(t)
	t.Setenv("EGRESS_TEST_AUTH", "Bearer alices-secret")
	cfg.Credentials = []Credential{{Host: Rule{Host: "tls.test", Port: u.tlsPort}, Header: "Authorization",
		ValueEnv: "EGRESS_TEST_AUTH", Placeholder: "TEST_TOKEN", Principals: []string{"alice"}}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Bind("exec_bob", "bob", cfg.Ceiling)
	c := newTestCapture(t)
	b.Serve(c.Capture)
	t.Cleanup(b.Close)
	status, body, err := fetch(t, u.proxyClient(c), "https://"+u.tlsOrigin+"/auth")
	if err != nil || status != 200 || body != "authorization=" {
		t.Errorf("bob's GET of alice's credential host = %d %q, %v; want it untouched", status, body, err)
	}
	if env := s.Env("bob", cfg.Ceiling); slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "TEST_TOKEN=") }) {
		t.Errorf("bob's environment has alice's placeholder: %v", env)
	}
	if got := record(b); len(got) != 1 || got[0].Intercepted {
		t.Errorf("audit = %+v, want one tunnelled entry", got)
	}
}
