package config

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestApproval: the gate's settings, their defaults and the start-up
// errors of bad values.
func TestApproval(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		want     Approval
		wantErr  string
		wantWarn string
	}{
		{"defaults", nil, Approval{Mode: ApprovalOff, Timeout: 5 * time.Minute}, "", ""},
		{"risky with rules", map[string]string{"CODEXEC_APPROVAL": "risky", "CODEXEC_APPROVAL_RULES": "/etc/codexec/approval.yaml",
			"CODEXEC_APPROVAL_TIMEOUT": "90s", "CODEXEC_APPROVAL_KEY_FILE": "/etc/codexec/approval.key"},
			Approval{Mode: ApprovalRisky, Rules: "/etc/codexec/approval.yaml", Timeout: 90 * time.Second, KeyFile: "/etc/codexec/approval.key"}, "", ""},
		{"unknown mode", map[string]string{"CODEXEC_APPROVAL": "sometimes"}, Approval{}, "CODEXEC_APPROVAL (flag --approval): must be one of off, risky, always", ""},
		{"short timeout", map[string]string{"CODEXEC_APPROVAL": "always", "CODEXEC_APPROVAL_TIMEOUT": "500ms"}, Approval{}, "CODEXEC_APPROVAL_TIMEOUT must be at least 1s", ""},
		{"rules while off", map[string]string{"CODEXEC_APPROVAL_RULES": "/r.yaml"}, Approval{Mode: ApprovalOff, Rules: "/r.yaml", Timeout: 5 * time.Minute}, "", "nobody is asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := Resolve(nil, func(k string) string { return tc.env[k] }, "/home/u", io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.Approval); diff != "" {
				t.Errorf("Approval (-want +got):\n%s", diff)
			}
			if got := strings.Join(c.Warnings, "\n"); !strings.Contains(got, tc.wantWarn) || (tc.wantWarn == "" && got != "") {
				t.Errorf("warnings %q, want %q", got, tc.wantWarn)
			}
		})
	}
}
