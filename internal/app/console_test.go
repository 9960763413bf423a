package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/httpserve"
	"github.com/codexec/codexec/internal/logindex"
)

// TestConsoleLoopbackOnly: codexec console serves on loopback only and
// says so for any other address, before it opens anything.
func TestConsoleLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "localhost:8080": true, "[::1]:0": true,
		"0.0.0.0:0": false, ":8080": false, "10.0.0.7:80": false, "example.com:80": false, "127.0.0.1": false} {
		if got := loopbackAddr(addr); got != ok {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, ok)
		}
		if ok {
			continue
		}
		err := Console(context.Background(), config.Config{}, ConsoleOptions{Addr: addr})
		if err == nil || !strings.Contains(err.Error(), "loopback only") {
			t.Errorf("Console on %q: %v, want a loopback-only refusal", addr, err)
		}
	}
}

// TestWireConsole: the console is mounted on the HTTP listener over a
// history that can be browsed, unless CODEXEC_CONSOLE=off; a key file
// shorter than 32 bytes is refused.
func TestWireConsole(t *testing.T) {
	dir := t.TempDir()
	idx := logindex.New(dir, filepath.Join(dir, logindex.FileName))
	t.Cleanup(func() { _ = idx.Close() })
	short := filepath.Join(dir, "short-key")
	if err := os.WriteFile(short, []byte("too short"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		console config.Console
		mounted bool
		err     string
	}{
		{"on", config.Console{Mode: config.ConsoleOn}, true, ""},
		{"off", config.Console{Mode: config.ConsoleOff}, false, ""},
		{"short key", config.Console{Mode: config.ConsoleOn, KeyFile: short}, false, "at least 32 bytes"},
	} {
		a := &App{console: consoleParts{history: idx}}
		var o httpserve.Options
		err := a.wireConsole(config.Config{Console: tc.console}, &o)
		if (o.Console != nil) != tc.mounted || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: mounted %v, err %v; want mounted %v, err %q", tc.name, o.Console != nil, err, tc.mounted, tc.err)
		}
	}
}
