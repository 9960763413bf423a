package intercept

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func caPool(t *testing.T, a *Authority) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(a.PEM()) {
		t.Fatalf("PEM() is not a PEM certificate: %q", a.PEM())
	}
	return pool
}

func TestAuthorityIssuesVerifiableLeaves(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	a, err := NewAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	ca := a.cert
	switch {
	case ca.Subject.CommonName != caName, !ca.IsCA, ca.MaxPathLen != 0, !ca.MaxPathLenZero,
		ca.KeyUsage != x509.KeyUsageCertSign, ca.NotAfter.Before(time.Now().Add(9 * 365 * 24 * time.Hour)):
		t.Errorf("CA %q: IsCA %v, MaxPathLen %d (zero %v), KeyUsage %v, NotAfter %v; want a constrained CA for ~10 years",
			ca.Subject.CommonName, ca.IsCA, ca.MaxPathLen, ca.MaxPathLenZero, ca.KeyUsage, ca.NotAfter)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, caKeyFile): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode(), err, want)
		}
	}
	pool := caPool(t, a)
	for _, tt := range []struct{ host, dnsName string }{
		{"api.example.com", "api.example.com"},
		{"API.Example.com.", "api.example.com"},
		{"127.0.0.1", "127.0.0.1"},
		{"[::1]", "::1"},
	} {
		c, err := a.CertFor(tt.host)
		if err != nil {
			t.Fatalf("CertFor(%q): %v", tt.host, err)
		}
		_, err = c.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: tt.dnsName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			t.Errorf("leaf for %q does not verify for %q: %v", tt.host, tt.dnsName, err)
		}
		if life := c.Leaf.NotAfter.Sub(time.Now()); life > leafLifetime || life < leafLifetime-time.Minute {
			t.Errorf("leaf for %q valid for %v more; want about %v", tt.host, life, leafLifetime)
		}
		if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "other.example.com"}); err == nil {
			t.Errorf("leaf for %q verifies for another host", tt.host)
		}
	}
}

func TestAuthorityCachesLeavesConcurrently(t *testing.T) {
	a, err := NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.CertFor("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			host := []string{"api.example.com", "b.example.com"}[i%2]
			c, err := a.CertFor(host)
			if err != nil || c.Leaf.DNSNames[0] != host {
				t.Errorf("CertFor(%q) = %v, %v", host, c, err)
			}
		})
	}
	wg.Wait()
	if again, _ := a.CertFor("api.example.com"); again != first {
		t.Error("a second CertFor for the same host issued a new leaf instead of the cached one")
	}
}

func TestAuthorityPersists(t *testing.T) {
	dir := t.TempDir()
	a, err := NewAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.PEM(), b.PEM()) {
		t.Fatal("reloading the state directory made a new CA")
	}
	leaf, err := b.CertFor("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: caPool(t, a), DNSName: "api.example.com"}); err != nil {
		t.Errorf("a leaf of the reloaded CA does not verify against the first one's PEM: %v", err)
	}
}

func TestAuthorityRefusesBadFiles(t *testing.T) {
	other, err := NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		file string // which file to spoil
		data []byte // nil: remove it
		want string
	}{
		{"corrupt certificate", caCertFile, []byte("not a certificate"), "holds no PEM certificate"},
		{"corrupt certificate body", caCertFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), caCertFile},
		{"corrupt key", caKeyFile, []byte("garbage"), "holds no PEM key"},
		{"certificate of another CA", caCertFile, other.PEM(), "does not belong to the certificate"},
		{"key missing", caKeyFile, nil, "without its key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := NewAuthority(dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tt.file)
			if tt.data == nil {
				err = os.Remove(path)
			} else {
				err = os.WriteFile(path, tt.data, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err := NewAuthority(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("newAuthority = %v; want an error naming %s and saying %q", err, path, tt.want)
			}
			if tt.data != nil {
				if got, _ := os.ReadFile(path); !bytes.Equal(got, tt.data) {
					t.Error("the unusable file was replaced")
				}
			}
		})
	}
}

func TestAuthorityReplacesKeyWithoutCertificate(t *testing.T) {
	dir := t.TempDir()
	a, err := NewAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, caCertFile)); err != nil {
		t.Fatal(err)
	}
	b, err := NewAuthority(dir)
	if err != nil {
		t.Fatalf("a key left without its certificate (a crash between the writes) should be replaced: %v", err)
	}
	if bytes.Equal(a.PEM(), b.PEM()) {
		t.Error("no new CA was made")
	}
}
