package app

import (
	"context"
	"strings"
	"testing"

	"github.com/codexec/codexec/internal/config"
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
