package egress

// This file is a temporary seam: the interception side of the package
// (authority.go, credentials.go, intercept.go) is built on another branch
// and replaces every definition here when the branches are merged. Delete
// this file at that merge.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"slices"
	"time"
)

// Credential is a header the proxy adds to requests to Host.
type Credential struct {
	Host                                     Rule
	Header, ValueEnv, ValueFile, Placeholder string
	Principals                               []string
}

// LoadCredentials reads a credentials file (seam: not implemented here).
func LoadCredentials(path string) ([]Credential, error) {
	return nil, errors.New("credentials are not available in this build")
}

type authority struct{ pem []byte }

func newAuthority(stateDir string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "codexec egress seam"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &authority{pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func (a *authority) certFor(host string) (*tls.Certificate, error) {
	return nil, errors.New("interception is not available in this build")
}

func (a *authority) PEM() []byte { return a.pem }

var (
	errHostMismatch = errors.New("a request named another host than its connection")
	errUpstream     = errors.New("upstream unreachable")
)

type credentialStore struct{ creds []Credential }

func newCredentialStore(creds []Credential) (*credentialStore, error) {
	return &credentialStore{creds: slices.Clone(creds)}, nil
}

func (s *credentialStore) match(principal, host string, port int) (*Credential, string, bool) {
	if s == nil {
		return nil, "", false
	}
	for i := range s.creds {
		c := &s.creds[i]
		if c.Host.matches(host, port) && (len(c.Principals) == 0 || slices.Contains(c.Principals, principal)) {
			return c, "", true
		}
	}
	return nil, "", false
}

func intercept(ctx context.Context, client net.Conn, host string, port int, cred *Credential, value string,
	cert *tls.Certificate, dial func(context.Context) (net.Conn, error), roots *x509.CertPool,
	count func(sent, recv int64)) error {
	return errors.New("interception is not available in this build")
}

func placeholderValue(c Credential) string { return "codexec-placeholder-" + c.Placeholder }
