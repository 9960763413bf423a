package config

import (
	"strings"
	"testing"
)

// TestStore: CODEXEC_STORE accepts embedded (the default) and PostgreSQL
// URLs; anything else stops the start with an error naming the variable
// and never showing the password.
func TestStore(t *testing.T) {
	cases := []struct {
		v, dsn, err string
	}{
		{"", "", ""},
		{"embedded", "", ""},
		{"postgres://codexec:s3cret@db.example:5432/codexec?sslmode=require", "postgres://codexec:s3cret@db.example:5432/codexec?sslmode=require", ""},
		{"postgresql:///codexec?host=/run/postgresql", "postgresql:///codexec?host=/run/postgresql", ""},
		{"mysql://u:s3cret@db/x", "", "CODEXEC_STORE must be"},
		{"host=db password=s3cret", "", "CODEXEC_STORE must be"},
		{"postgres://u:s3cret@/codexec", "", "names no PostgreSQL host"},
		{"postgres://u:s3cret@db.example", "", "names no database"},
	}
	for _, c := range cases {
		cfg, err := load(t, nil, map[string]string{"CODEXEC_STORE": c.v})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.v, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one containing %q", c.v, err, c.err)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%q: error shows the password: %v", c.v, err)
		case err == nil && cfg.StoreDSN() != c.dsn:
			t.Errorf("%q: StoreDSN %q, want %q", c.v, cfg.StoreDSN(), c.dsn)
		}
	}
	if got := MaskSecrets("postgres://codexec:s3cret@db.example:5432/codexec?password=p2"); strings.Contains(got, "s3cret") || strings.Contains(got, "p2") {
		t.Errorf("codexec env shows a store credential: %s", got)
	}
}
