package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/config"
)

// TestBuildApproval: the gate is built only when asked for, and a bad
// rules or key file stops the start naming its setting.
func TestBuildApproval(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad := write("good.yaml", "commands: [ls]\n"), write("bad.yaml", "tools: {execute_code: maybe}\n")
	key, short := write("key", strings.Repeat("k", 40)), write("short", "k")
	for _, tc := range []struct {
		name    string
		a       config.Approval
		built   bool
		wantErr string
	}{
		{"off", config.Approval{Mode: "off", Timeout: time.Minute}, false, ""},
		{"always without files", config.Approval{Mode: "always", Timeout: time.Minute}, true, ""},
		{"risky with rules and key", config.Approval{Mode: "risky", Rules: good, KeyFile: key, Timeout: time.Minute}, true, ""},
		{"bad rules", config.Approval{Mode: "risky", Rules: bad, Timeout: time.Minute}, false, "CODEXEC_APPROVAL_RULES: " + bad},
		{"missing rules", config.Approval{Mode: "risky", Rules: filepath.Join(dir, "none.yaml"), Timeout: time.Minute}, false, "CODEXEC_APPROVAL_RULES"},
		{"short key", config.Approval{Mode: "always", KeyFile: short, Timeout: time.Minute}, false, "CODEXEC_APPROVAL_KEY_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := buildApproval(config.Config{Approval: tc.a}, "/usr/bin:/bin")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || (g != nil) != tc.built {
				t.Fatalf("gate %v, error %v; want built %v", g, err, tc.built)
			}
		})
	}
}
