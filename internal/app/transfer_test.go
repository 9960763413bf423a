package app

import (
	"testing"

	"github.com/codexec/codexec/internal/config"
)

// TestTransferBase: transfer URLs name the issuing replica's address with
// replicas, else the public origin of CODEXEC_RESOURCE_URL, else the bound
// address.
func TestTransferBase(t *testing.T) {
	for _, c := range []struct {
		resource, replicaAddr, tls string
		replicated                 bool
		want                       string
	}{
		{"", "", "", false, "http://127.0.0.1:9000"},
		{"", "", "cert.pem", false, "https://127.0.0.1:9000"},
		{"https://codexec.example.com/mcp", "", "", false, "https://codexec.example.com"},
		{"https://example.com/codexec/mcp/", "", "", false, "https://example.com/codexec"},
		{"https://codexec.example.com/mcp", "http://10.0.0.7:8080", "", true, "http://10.0.0.7:8080"},
		{"https://codexec.example.com/mcp", "", "", true, "http://127.0.0.1:9000"},
	} {
		cfg := config.Defaults(t.TempDir())
		cfg.Remote.ResourceURL, cfg.Replica.Addr, cfg.Remote.TLSCert = c.resource, c.replicaAddr, c.tls
		if got := transferBase(cfg, "127.0.0.1:9000", c.replicated); got != c.want {
			t.Errorf("%+v: %s, want %s", c, got, c.want)
		}
	}
}
