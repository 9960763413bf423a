package egress

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/codexec/codexec/internal/atomicfile"
	"github.com/codexec/codexec/internal/sandbox"
)

// systemBundle is the host's CA bundle (Debian's path), the base of the
// bundle placed in sandboxes.
var systemBundle = "/etc/ssl/certs/ca-certificates.crt"

// sandboxDir is the subdirectory of StateDir with the files placed in
// sandboxes: 0755 with 0644 files, so the sandbox's user can read them.
const sandboxDir = "sandbox"

// Env is the environment a run with policy p needs: the proxy variables
// (every common spelling), the CA bundle variables of python, pip, node,
// npm and curl, and each credential's placeholder the run may use. It is
// nil when p allows nothing.
func (s *Service) Env(principal string, p Policy) []string {
	if !s.Enabled() || p.None() {
		return nil
	}
	proxy := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	env := []string{
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy,
		"http_proxy=" + proxy, "https_proxy=" + proxy,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		// Node's fetch honours the proxy variables only when asked.
		"NODE_USE_ENV_PROXY=1",
	}
	for _, name := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS", "npm_config_cafile"} {
		env = append(env, name+"="+CABundlePath)
	}
	for _, c := range s.usableCredentials(principal, p) {
		env = append(env, c.Placeholder+"="+placeholderValue(c))
	}
	return env
}

// usableCredentials lists the credentials principal may use on some host
// p allows.
func (s *Service) usableCredentials(principal string, p Policy) []Credential {
	var out []Credential
	for _, c := range s.cfg.Credentials {
		if c.Placeholder == "" || !permits(c, principal) {
			continue
		}
		if slices.ContainsFunc(p.Allow, func(r Rule) bool { return overlaps(r, c.Host) }) {
			out = append(out, c)
		}
	}
	return out
}

// permits reports whether principal may use c.
func permits(c Credential, principal string) bool {
	return len(c.Principals) == 0 || slices.Contains(c.Principals, principal)
}

// overlaps reports whether some host:port is allowed by both rules.
func overlaps(a, b Rule) bool {
	if !slices.ContainsFunc(a.ports(), b.matchesPort) {
		return false
	}
	return a.coversHost(b) || b.coversHost(a)
}

// readCAFile reads CODEXEC_EGRESS_CA_FILE ("" gives nil) and checks it
// holds at least one PEM certificate.
func readCAFile(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_EGRESS_CA_FILE: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("CODEXEC_EGRESS_CA_FILE %s holds no PEM certificate", path)
	}
	return data, nil
}

// upstreamRoots are the CAs upstream TLS is verified against: the
// system's plus the extra PEM.
func upstreamRoots(extra []byte) (*x509.CertPool, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if len(extra) > 0 {
		roots.AppendCertsFromPEM(extra)
	}
	return roots, nil
}

// writeSandboxFiles writes the resolver configuration and the CA bundle
// (system bundle + codexec CA + extra) under StateDir and returns their
// read-only mounts.
func writeSandboxFiles(stateDir string, caPEM, extra []byte) ([]sandbox.Mount, error) {
	dir := filepath.Join(stateDir, sandboxDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("egress sandbox files: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("egress sandbox files: %w", err)
	}
	system, err := os.ReadFile(systemBundle)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("system CA bundle: %w", err)
	}
	bundle := joinPEM(system, caPEM, extra)
	resolv := []byte("nameserver 127.0.0.1\noptions ndots:0\n")
	files := []struct {
		name, target string
		data         []byte
	}{{"resolv.conf", ResolvConfPath, resolv}, {"ca-certificates.crt", CABundlePath, bundle}}
	var mounts []sandbox.Mount
	for _, f := range files {
		host := filepath.Join(dir, f.name)
		if err := atomicfile.WriteFile(host, f.data, 0o644); err != nil {
			return nil, fmt.Errorf("egress sandbox file: %w", err)
		}
		mounts = append(mounts, sandbox.Mount{Host: host, Target: f.target, ReadOnly: true})
	}
	return mounts, nil
}

// joinPEM concatenates PEM blocks, each ending in a newline.
func joinPEM(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		out = append(out, p...)
		if p[len(p)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out
}
