package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsApprovalReport is what testdata/tsclient2/approval.mjs prints.
type tsApprovalReport struct {
	ProtocolVersion string `json:"protocolVersion"`
	Questions       []struct {
		Message string   `json:"message"`
		Fields  []string `json:"fields"`
	} `json:"questions"`
	IsError    bool           `json:"isError"`
	Text       string         `json:"text"`
	Structured map[string]any `json:"structured"`
	Error      string         `json:"error"`
}

// TestApprovalTSClient: the official TypeScript client 2.x, which speaks
// 2025-11-25, is asked through form elicitation during the call; the
// question shows the code; approved, the code runs once; declined, the
// call is refused and nothing runs.
func TestApprovalTSClient(t *testing.T) {
	sameInEveryMode(t, "the question's wire, over whatever mode runs the code")
	dir := tsClient2(t)
	root := approvalRoot(t)
	for _, tc := range []struct {
		answer   string
		wantRuns int
		wantErr  bool
	}{{"accept", 1, false}, {"decline", 0, true}} {
		t.Run(tc.answer, func(t *testing.T) {
			run := newApprovalRun(t, root)
			r := runApprovalScript(t, dir, []string{"CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_DIR=" + aclFreeDir(t),
				"CODEXEC_APPROVAL=always", "CODEXEC_WRITABLE_ROOTS=" + root}, tc.answer, run.dir, binary(t), "serve")
			if r.Error != "" {
				t.Fatalf("client failed: %s", r.Error)
			}
			if r.ProtocolVersion != "2025-11-25" || len(r.Questions) != 1 || !strings.Contains(r.Questions[0].Message, "ran.txt") {
				t.Errorf("negotiated %q, questions %+v: want 2025-11-25 and one question showing the code", r.ProtocolVersion, r.Questions)
			}
			if r.IsError != tc.wantErr || run.runs(t) != tc.wantRuns {
				t.Errorf("isError %v (want %v), the code ran %d times (want %d); answer: %s", r.IsError, tc.wantErr, run.runs(t), tc.wantRuns, r.Text)
			}
			if tc.wantErr && !strings.Contains(r.Text, "NOT_ALLOWED") {
				t.Errorf("a declined call answers %q, want NOT_ALLOWED", r.Text)
			}
		})
	}
}

// runApprovalScript runs testdata/tsclient2/approval.mjs and decodes its
// report.
func runApprovalScript(t *testing.T, dir string, env []string, args ...string) tsApprovalReport {
	t.Helper()
	var r tsApprovalReport
	runNodeReport(t, filepath.Join(dir, "approval.mjs"), withServerMode(env), 2*time.Minute, &r, args...)
	return r
}
