package e2e

import (
	"strings"
	"testing"
)

// TestShellBuiltinsUnderAllowlistSeed002: "GIVEN ALLOWED_COMMANDS includes
// bash", bash -c "exit 5" returns exit_code 5 — builtins that start no program
// need no listing — while builtins that run code, programs by path and seed
// 002's own "pwd" (under ALLOWED_COMMANDS=ls) stay refused.
func TestShellBuiltinsUnderAllowlistSeed002(t *testing.T) {
	s := start(t, "ALLOWED_COMMANDS=bash,ls")
	res := s.call("execute_command", map[string]any{"command": `bash -c "exit 5"`})
	y := parseYAML(t, res)
	if res.IsError || y.ExitCode == nil || *y.ExitCode != 5 {
		t.Fatalf(`bash -c "exit 5": want exit_code 5, got isError=%v\n%s`, res.IsError, text(res))
	}
	y = mustRun(t, s, "execute_command", map[string]any{"command": `cd / && test -d tmp && [ -d usr ] && echo "ok $(printf %s x)"; true`})
	if y.Stdout != "ok x\n" {
		t.Fatalf("builtins: %q", y.Stdout)
	}
	for cmd, want := range map[string]string{
		"eval 'exit 0'":               "runs code given as data",
		"source /dev/null":            "runs code given as data",
		"exec ls":                     "runs code given as data",
		"command ls":                  "runs code given as data",
		"trap 'ls' EXIT":              "runs code given as data",
		"/bin/echo x":                 "not allowed",
		"pwd":                         `"pwd" is not allowed`,
		`bash -c "cat /etc/hostname"`: `"cat" is not allowed`,
	} {
		mustReject(t, s, "execute_command", map[string]any{"command": cmd}, want)
	}
	// execute_process runs a program, never a builtin: echo is /usr/bin/echo.
	res = s.call("execute_process", map[string]any{"file": "echo", "args": []string{"x"}})
	if !res.IsError || !strings.Contains(text(res), "not allowed") {
		t.Fatalf("execute_process echo must be checked: %s", text(res))
	}
}
