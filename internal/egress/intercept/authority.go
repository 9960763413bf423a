package intercept

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/atomicfile"
)

// The interception CA exists so that the proxy can add a credential to a
// request the program sends over TLS: the sandbox trusts this CA (its trust
// bundle has it), and the proxy presents a leaf for the requested host
// signed by it. The key never leaves the server's state directory; it is
// kept across restarts so that a trust bundle written earlier stays valid.
const (
	caCertFile = "egress-ca.crt"
	caKeyFile  = "egress-ca.key"
	caName     = "codexec egress interception CA"
	caLifetime = 10 * 365 * 24 * time.Hour
	// leafLifetime is short: a leaf is made again on demand, so a copied
	// one is soon worthless.
	leafLifetime = 24 * time.Hour
	// leafRenew is how long before its end a cached leaf is replaced, so
	// that no handshake gets a leaf about to expire.
	leafRenew = time.Hour
	// maxLeaves bounds the cache; the hosts come from the policy, so a
	// full cache is unusual and simply starts again.
	maxLeaves = 4096
)

// Authority is the interception CA: its key, its certificate, and the
// leaves it issued (per host, until near their end). Safe for concurrent
// use.
type Authority struct {
	key    *ecdsa.PrivateKey
	cert   *x509.Certificate
	pem    []byte
	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewAuthority loads the CA from stateDir, or creates it there (directory
// 0700, key 0600) when there is no certificate yet. A file that is present
// but unusable is an error naming it: a CA the sandboxes may trust is never
// replaced silently.
func NewAuthority(stateDir string) (*Authority, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("egress CA: create the state directory: %w", err)
	}
	certPath, keyPath := filepath.Join(stateDir, caCertFile), filepath.Join(stateDir, caKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		// A key without a certificate is what a crash between the two
		// writes leaves: nothing trusts that key yet, so it is replaced.
		return createAuthority(certPath, keyPath)
	}
	if err != nil {
		return nil, fmt.Errorf("egress CA: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("egress CA: %w (the certificate %s is there without its key; remove it to make a new CA)", err, certPath)
	}
	return loadAuthority(certPath, certPEM, keyPath, keyPEM)
}

// createAuthority makes a new CA and writes it, key first.
func createAuthority(certPath, keyPath string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress CA: generate a key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: caName, Organization: []string{"codexec"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress CA: create the certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("egress CA: encode the key: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := atomicfile.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("egress CA: write the key: %w", err)
	}
	if err := atomicfile.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("egress CA: write the certificate: %w", err)
	}
	return loadAuthority(certPath, certPEM, keyPath, keyPEM)
}

// loadAuthority parses and checks a CA: one certificate, one key that
// belongs to it, a CA that may sign, still valid.
func loadAuthority(certPath string, certPEM []byte, keyPath string, keyPEM []byte) (*Authority, error) {
	fix := "; remove " + certPath + " and " + keyPath + " to make a new CA"
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("egress CA: %s holds no PEM certificate%s", certPath, fix)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("egress CA: %s: %w%s", certPath, err, fix)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("egress CA: %s holds no PEM key%s", keyPath, fix)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("egress CA: %s: %w%s", keyPath, err, fix)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	switch {
	case !ok || !key.PublicKey.Equal(cert.PublicKey):
		return nil, fmt.Errorf("egress CA: the key in %s does not belong to the certificate in %s%s", keyPath, certPath, fix)
	case !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0:
		return nil, fmt.Errorf("egress CA: %s is not a CA certificate that may sign%s", certPath, fix)
	case time.Now().After(cert.NotAfter.Add(-leafLifetime)):
		return nil, fmt.Errorf("egress CA: %s expired on %s%s", certPath, cert.NotAfter.Format(time.DateOnly), fix)
	}
	return &Authority{key: key, cert: cert, pem: pem.EncodeToMemory(cb), leaves: map[string]*tls.Certificate{}}, nil
}

// PEM returns the CA certificate, for the sandboxes' trust bundle.
func (a *Authority) PEM() []byte { return append([]byte(nil), a.pem...) }

// CertFor returns a leaf certificate for host (a DNS name, or an IP
// literal, bracketed or not), issuing it when none is cached or the
// cached one is near its end.
func (a *Authority) CertFor(host string) (*tls.Certificate, error) {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return nil, errors.New("egress CA: no host name to issue a certificate for")
	}
	now := time.Now()
	a.mu.Lock()
	c := a.leaves[host]
	a.mu.Unlock()
	if c != nil && now.Before(c.Leaf.NotAfter.Add(-leafRenew)) {
		return c, nil
	}
	c, err := a.issue(host, now)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.leaves) >= maxLeaves {
		clear(a.leaves)
	}
	a.leaves[host] = c
	return c, nil
}

// issue signs a new leaf for host, valid from a little before now (clocks
// in the sandbox may lag) for leafLifetime, never past the CA's end.
func (a *Authority) issue(host string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress CA: generate a key for %s: %w", host, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: host},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(leafLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if tmpl.NotAfter.After(a.cert.NotAfter) {
		tmpl.NotAfter = a.cert.NotAfter
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("egress CA: issue a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress CA: issue a certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// randomSerial is a 128-bit random serial number, as RFC 5280 asks (unique
// per CA, positive).
func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)) // crypto/rand never fails
	return n.Add(n, big.NewInt(1))
}
