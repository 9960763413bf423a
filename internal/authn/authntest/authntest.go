// Package authntest is a minimal OAuth 2.1 authorization server for tests:
// an httptest server on loopback publishing RFC 8414 metadata and a JWKS
// with a freshly generated ES256 key, and a method that mints access tokens
// signed with that key. It issues no tokens over HTTP; tests mint them
// directly.
package authntest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a running test authorization server.
type Issuer struct {
	URL     string // issuer identifier (the server's base URL)
	JWKSURL string
	key     *ecdsa.PrivateKey
	kid     string
}

// New starts an issuer, closed at test cleanup.
func New(t testing.TB) *Issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &Issuer{key: key, kid: "test-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, iss.jwks()) })
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": iss.URL, "jwks_uri": iss.JWKSURL, "authorization_endpoint": iss.URL + "/authorize",
			"token_endpoint": iss.URL + "/token", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss.URL, iss.JWKSURL = srv.URL, srv.URL+"/jwks.json"
	return iss
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (i *Issuer) jwks() map[string]any {
	pub, _ := i.key.PublicKey.ECDH()
	raw := pub.Bytes() // 0x04 || X || Y
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "kid": i.kid, "alg": "ES256", "use": "sig",
		"x": b64(raw[1:33]), "y": b64(raw[33:]),
	}}}
}

// Token mints an ES256 access token for subject and audience valid for ttl
// (negative ttl: already expired). extra claims are merged in last.
func (i *Issuer) Token(t testing.TB, subject, audience string, ttl time.Duration, extra map[string]any) string {
	t.Helper()
	now := time.Now()
	claims := jwt.MapClaims{
		"iss": i.URL, "sub": subject, "aud": audience, "iat": now.Add(-time.Minute).Unix(),
		"exp": now.Add(ttl).Unix(), "scope": "mcp",
	}
	for k, v := range extra {
		claims[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = i.kid
	s, err := tok.SignedString(i.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ForeignToken is a well-formed token for the same claims signed by a key
// the issuer never published.
func (i *Issuer) ForeignToken(t testing.TB, subject, audience string) string {
	t.Helper()
	other := &Issuer{URL: i.URL, kid: i.kid}
	var err error
	if other.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	return other.Token(t, subject, audience, time.Hour, nil)
}
