package config

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestReplica: a PostgreSQL store served over HTTP needs the hop secret;
// stdio or the embedded store do not; codexec env masks the secret.
func TestReplica(t *testing.T) {
	const pg = "postgres://u:pw@db.example:5432/codexec"
	const sec = "0123456789abcdef-secret"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
		lease   time.Duration
	}{
		{"embedded over HTTP needs none", map[string]string{"CODEXEC_HTTP_ADDR": "127.0.0.1:8080"}, "", 15 * time.Second},
		{"postgres on stdio needs none", map[string]string{"CODEXEC_STORE": pg}, "", 15 * time.Second},
		{"postgres over HTTP without secret", map[string]string{"CODEXEC_STORE": pg, "CODEXEC_HTTP_ADDR": "127.0.0.1:8080"}, "CODEXEC_REPLICA_SECRET must be set", 0},
		{"short secret", map[string]string{"CODEXEC_STORE": pg, "CODEXEC_HTTP_ADDR": "127.0.0.1:8080", "CODEXEC_REPLICA_SECRET": "short"}, "16 or more", 0},
		{"short lease", map[string]string{"CODEXEC_STORE": pg, "CODEXEC_HTTP_ADDR": "127.0.0.1:8080", "CODEXEC_REPLICA_SECRET": sec, "CODEXEC_REPLICA_LEASE": "500ms"}, "CODEXEC_REPLICA_LEASE", 0},
		{"replica", map[string]string{"CODEXEC_STORE": pg, "CODEXEC_HTTP_ADDR": "127.0.0.1:8080", "CODEXEC_REPLICA_SECRET": sec, "CODEXEC_REPLICA_LEASE": "6s"}, "", 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, eff, err := Resolve(nil, func(k string) string { return tc.env[k] }, "/home/u", io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "short") {
					t.Errorf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Replica.Lease != tc.lease {
				t.Errorf("lease %v, want %v", c.Replica.Lease, tc.lease)
			}
			for _, e := range eff {
				if e.Env == "CODEXEC_REPLICA_SECRET" && strings.Contains(e.Value, sec) {
					t.Errorf("codexec env shows the replica secret: %q", e.Value)
				}
			}
		})
	}
}
