package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/codexec/codexec/internal/authn/authntest"
)

func TestParseTokens(t *testing.T) {
	sum := sha256.Sum256([]byte("bob-secret-token-0123"))
	good := "# team tokens\nalice-secret-token-0123 alice\n\nsha256:" + hex.EncodeToString(sum[:]) + " bob\n"
	table, err := ParseTokens([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if table[sha256.Sum256([]byte("alice-secret-token-0123"))] != "alice" || table[sum] != "bob" || len(table) != 2 {
		t.Errorf("table %v", table)
	}
	bad := []struct{ in, want string }{
		{"short alice\n", "shorter than"},
		{"alice-secret-token-0123\n", "want"},
		{"sha256:abcd bob\n", "64 hex"},
		{"alice-secret-token-0123 a\nalice-secret-token-0123 b\n", "twice"},
		{"# nothing\n", "no tokens"},
	}
	for _, b := range bad {
		if _, err := ParseTokens([]byte(b.in)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: error %v, want %q", b.in, err, b.want)
		}
	}
}

func TestTokenFileReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(s string, mtime time.Time) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(path, mtime, mtime)
	}
	base := time.Now().Add(-time.Hour)
	write("alice-secret-token-0123 alice\n", base)
	f, err := LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := f.Lookup("alice-secret-token-0123"); !ok || p != "alice" {
		t.Fatalf("lookup = %q %v", p, ok)
	}
	write("carol-secret-token-0123 carol\n", base.Add(time.Minute))
	f.mu.Lock()
	f.checked = time.Time{} // skip the once-a-second throttle
	f.mu.Unlock()
	if _, ok := f.Lookup("alice-secret-token-0123"); ok {
		t.Error("revoked token still accepted after reload")
	}
	write("garbage\n", base.Add(2*time.Minute))
	f.mu.Lock()
	f.checked = time.Time{}
	f.mu.Unlock()
	if p, ok := f.Lookup("carol-secret-token-0123"); !ok || p != "carol" {
		t.Errorf("a broken file must keep the previous table; lookup = %q %v", p, ok)
	}
}

func TestJWT(t *testing.T) {
	iss := authntest.New(t)
	const resource = "http://127.0.0.1:9/mcp"
	ctx := context.Background()
	j, err := NewJWT(ctx, JWTOptions{Issuer: iss.URL, Resource: resource}) // jwks_uri discovered
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	v := &Verifier{JWT: j, OnFailure: func(r string) { reasons = append(reasons, r) }}
	ti, err := v.Verify(ctx, iss.Token(t, "alice", resource, time.Hour, nil), nil)
	if err != nil || ti.UserID != "alice" || len(ti.Scopes) != 1 || ti.Expiration.IsZero() {
		t.Fatalf("valid token: %+v %v", ti, err)
	}
	bad := []struct {
		name, token, reason string
	}{
		{"expired", iss.Token(t, "alice", resource, -time.Minute, nil), "expired"},
		{"other audience", iss.Token(t, "alice", "http://elsewhere/mcp", time.Hour, nil), "invalid"},
		{"other issuer", iss.Token(t, "alice", resource, time.Hour, map[string]any{"iss": "http://evil"}), "invalid"},
		{"unknown key", iss.ForeignToken(t, "alice", resource), "invalid"},
		{"no subject", iss.Token(t, "", resource, time.Hour, nil), "invalid"},
		{"not a jwt", "opaque-token-value", "invalid"},
	}
	for _, b := range bad {
		reasons = nil
		if _, err := v.Verify(ctx, b.token, nil); !errors.Is(err, auth.ErrInvalidToken) || len(reasons) != 1 || reasons[0] != b.reason {
			t.Errorf("%s: err %v reasons %v, want ErrInvalidToken/%s", b.name, err, reasons, b.reason)
		}
	}
}
