package egress

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/google/go-cmp/cmp"
)

func TestNilServiceIsOff(t *testing.T) {
	var s *Service
	if s.Enabled() || s.Capture() != nil || s.Env("alice", Policy{}) != nil {
		t.Error("a nil service must be off")
	}
	if p, err := s.Resolve("alice", nil); err != nil || !p.None() {
		t.Errorf("Resolve(nil) = %v, %v; want no network", p, err)
	}
	_, err := s.Resolve("alice", &Policy{Allow: []Rule{{Host: "api.example.com"}}})
	if err == nil || !strings.Contains(err.Error(), "CODEXEC_EGRESS_ALLOW is empty") {
		t.Errorf("Resolve(non-empty) on a server without egress = %v", err)
	}
	if allowed, denied := s.Stats(); allowed+denied != 0 {
		t.Error("a nil service counted connections")
	}
	b := s.Bind("exec_x", "alice", Policy{})
	capture := newTestCapture(t)
	b.Serve(capture.Capture) // closes it: connections refused at once
	if conn, err := net.DialTimeout("tcp", capture.proxyAddr, time.Second); err == nil {
		conn.Close()
		t.Error("a nil binding left the capture open")
	}
	b.SetPolicy(Policy{})
	b.Close()
	if b.Record() != nil {
		t.Error("a nil binding has an audit")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	ceiling := Policy{Allow: []Rule{{Host: "api.example.com"}}}
	tests := []struct {
		name string
		cfg  Config
		says string
	}{
		{"principal outside", Config{Ceiling: ceiling, StateDir: t.TempDir(),
			Principals: map[string]Policy{"bob": {Allow: []Rule{{Host: "other.example.com"}}}}}, `principal "bob"`},
		{"principal without ceiling", Config{
			Principals: map[string]Policy{"bob": {Allow: []Rule{{Host: "other.example.com"}}}}}, "CODEXEC_EGRESS_ALLOW is empty"},
		{"credentials without ceiling", Config{Credentials: []Credential{{Host: Rule{Host: "api.example.com"}}}}, "CODEXEC_EGRESS_CREDENTIALS"},
		{"credential outside", Config{Ceiling: ceiling, StateDir: t.TempDir(),
			Credentials: []Credential{{Host: Rule{Host: "x.example.com"}}}}, "CODEXEC_EGRESS_CREDENTIALS"},
		{"no state dir", Config{Ceiling: ceiling}, "state directory"},
		{"negative limit", Config{Ceiling: ceiling, StateDir: t.TempDir(), Limits: Limits{MaxBytes: -1}}, "negative"},
		{"missing CA file", Config{Ceiling: ceiling, StateDir: t.TempDir(), CAFile: "/nonexistent/ca.pem"}, "CODEXEC_EGRESS_CA_FILE"},
		{"CA file without PEM", Config{Ceiling: ceiling, StateDir: t.TempDir(), CAFile: writeTemp(t, "not pem")}, "no PEM certificate"},
	}
	for _, tt := range tests {
		s, err := New(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.says) || s != nil {
			t.Errorf("%s: New = %v, %v; want an error saying %q", tt.name, s, err, tt.says)
		}
	}
	if s, err := New(Config{}); s != nil || err != nil {
		t.Errorf("New(zero) = %v, %v; want nil (egress off)", s, err)
	}
}

func writeTemp(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResolve(t *testing.T) {
	s, err := New(Config{
		Ceiling:    mustPolicy(t, "api.example.com,*.example.org"),
		Principals: map[string]Policy{"bob": mustPolicy(t, "a.example.org")},
		StateDir:   t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		principal, requested string // requested "-" = nil
		want                 string
		outside              string
	}{
		{"alice", "-", "", ""},
		{"alice", "", "", ""},
		{"alice", "api.example.com:443,b.example.org", "api.example.com:443,b.example.org", ""},
		{"alice", "api.example.com:8080", "", "api.example.com:8080"},
		{"bob", "a.example.org", "a.example.org", ""},
		{"bob", "api.example.com", "", "api.example.com"},
	}
	for _, tt := range tests {
		var req *Policy
		if tt.requested != "-" {
			p := mustPolicy(t, tt.requested)
			req = &p
		}
		got, err := s.Resolve(tt.principal, req)
		var oe *OutsideError
		switch {
		case tt.outside != "" && (!errors.As(err, &oe) || oe.Rule.String() != tt.outside):
			t.Errorf("Resolve(%s, %q) error = %v, want one naming %q", tt.principal, tt.requested, err, tt.outside)
		case tt.outside == "" && (err != nil || got.String() != tt.want):
			t.Errorf("Resolve(%s, %q) = %q, %v; want %q", tt.principal, tt.requested, got, err, tt.want)
		}
	}
	s.cfg.DefaultCeiling = true
	if got, _ := s.Resolve("bob", nil); got.String() != "a.example.org" {
		t.Errorf("with the ceiling as default, Resolve(bob, nil) = %q", got)
	}
}

func TestCaptureFilesAndEnv(t *testing.T) {
	ca := newTestCA(t)
	state := t.TempDir()
	t.Setenv("EGRESS_TEST_API", "Bearer api-secret")
	t.Setenv("EGRESS_TEST_DB", "db-secret")
	s, err := New(Config{
		Ceiling:  mustPolicy(t, "api.example.com,db.example.com:5432,x.example.com:3128,*.example.org:443"),
		CAFile:   writeTemp(t, string(ca.pem)),
		StateDir: state,
		Credentials: []Credential{
			{Host: Rule{Host: "api.example.com"}, Header: "Authorization", ValueEnv: "EGRESS_TEST_API", Placeholder: "API_TOKEN"},
			{Host: Rule{Host: "db.example.com", Port: 5432}, Header: "X-Token", ValueEnv: "EGRESS_TEST_DB", Placeholder: "DB_TOKEN", Principals: []string{"bob"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := s.Capture()
	want := &sandbox.CaptureSpec{ProxyPort: 3128, Ports: []int{80, 443, 5432}, DNS: true, Files: []sandbox.Mount{
		{Host: filepath.Join(state, "sandbox", "resolv.conf"), Target: "/etc/resolv.conf", ReadOnly: true},
		{Host: filepath.Join(state, "sandbox", "ca-certificates.crt"), Target: "/etc/ssl/certs/ca-certificates.crt", ReadOnly: true},
	}}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("Capture (-want +got):\n%s", diff)
	}
	checkMode(t, filepath.Join(state, "sandbox"), 0o755)
	for _, m := range spec.Files {
		checkMode(t, m.Host, 0o644)
	}
	bundle, _ := os.ReadFile(spec.Files[1].Host)
	if !bytes.Contains(bundle, ca.pem) || !bytes.Contains(bundle, s.ca.PEM()) {
		t.Error("the sandbox's CA bundle lacks the extra CA or codexec's CA")
	}
	if resolv, _ := os.ReadFile(spec.Files[0].Host); !strings.Contains(string(resolv), "nameserver 127.0.0.1\n") {
		t.Errorf("resolv.conf = %q", resolv)
	}

	env := s.Env("alice", mustPolicy(t, "api.example.com"))
	for _, v := range []string{"HTTPS_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1,::1", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		"NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt", "API_TOKEN=" + placeholderValue(s.cfg.Credentials[0])} {
		if !slices.Contains(env, v) {
			t.Errorf("Env lacks %s: %v", v, env)
		}
	}
	if slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "DB_TOKEN=") }) {
		t.Error("Env gave alice a placeholder of a credential only bob may use")
	}
	if env := s.Env("bob", mustPolicy(t, "db.example.com:5432")); !slices.Contains(env, "DB_TOKEN="+placeholderValue(s.cfg.Credentials[1])) {
		t.Errorf("Env(bob) lacks his credential's placeholder: %v", env)
	}
	if env := s.Env("alice", Policy{}); env != nil {
		t.Errorf("Env for a run without network = %v", env)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode().Perm(), err, want)
	}
}
