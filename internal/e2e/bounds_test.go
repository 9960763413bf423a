package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTimeoutOutOfRangeRefused: a timeout beyond CODEXEC_MAX_TIMEOUT_MS,
// however large, or below 1, is refused by every tool that takes one with
// an error naming the valid range; none overflows into a tiny timeout.
func TestTimeoutOutOfRangeRefused(t *testing.T) {
	sameInEveryMode(t, "pins subprocess mode")
	s := start(t, "CODEXEC_SANDBOX_MODE=subprocess", "ALLOWED_COMMANDS=echo")
	const huge = 9223372036854775807
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"execute_code", map[string]any{"language": "bash", "code": "echo ran", "timeout_ms": huge}, "timeout_ms must be between 1 and 300000 (CODEXEC_MAX_TIMEOUT_MS), got 9223372036854775807"},
		{"execute_code", map[string]any{"language": "bash", "code": "echo ran", "timeout_ms": -1}, "timeout_ms must be between 1 and 300000"},
		{"execute_code", map[string]any{"language": "bash", "code": "echo ran", "timeout": huge}, "timeout must be between 1 and 300 seconds, got 9223372036854775807"},
		{"execute_code", map[string]any{"code": "console.log('ran')", "timeout_ms": huge}, "timeout_ms must be between 1 and 300000"},
		{"execute_code", map[string]any{"language": "python", "code": "print('ran')", "session_id": "bounds", "timeout": -3}, "timeout must be between 1 and 300 seconds, got -3"},
		{"send_to_session", map[string]any{"session_id": "nosuch", "code": "print('ran')", "timeout_ms": huge}, "timeout_ms must be between 1 and 300000"},
		{"execute_command", map[string]any{"command": "echo ran", "timeout_ms": huge}, "timeout_ms must be between 1 and 300000"},
		{"execute_process", map[string]any{"file": "echo", "args": []string{"ran"}, "timeout_ms": huge}, "timeout_ms must be between 1 and 300000"},
		{"run_script", map[string]any{"name": "nosuch", "timeout_ms": huge}, "timeout_ms must be between 1 and 300000"},
	}
	for _, tc := range cases {
		res := s.call(tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v: want an error containing %q, got isError=%v %s", tc.tool, tc.args, tc.want, res.IsError, text(res))
		}
	}
	// A number no int holds is refused before any tool code sees it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code",
		Arguments: json.RawMessage(`{"language":"bash","code":"echo ran","timeout_ms":123456789012345678901234567890}`)})
	if err == nil && (!res.IsError || strings.Contains(text(res), "ran\n")) {
		t.Errorf("timeout_ms beyond int64: want a refusal, got %s", text(res))
	}
}
