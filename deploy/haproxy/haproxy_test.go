package haproxy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// required are the lines that make the configuration session-aware; valid
// syntax without them would balance an MCP session's calls across replicas.
var required = []string{
	"stick match req.hdr(Mcp-Session-Id)",
	"stick store-response res.hdr(Mcp-Session-Id)",
	"http-check send meth GET uri /readyz",
	"timeout server 1h",
}

// TestConfigsParse runs `haproxy -c` on each configuration: HAProxy parses
// it and checks every section, keyword and sample fetch (the stick rules on
// Mcp-Session-Id, the /readyz health check) without starting a proxy.
//
// Traffic through the proxy to real codexec replicas is the multi-replica
// loopback test's job (three `codexec serve --http` behind haproxy.cfg);
// stand-in HTTP servers would test HAProxy, not our use of it.
func TestConfigsParse(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed (scripts/deps.sh installs Debian's haproxy)")
	}
	for _, cfg := range []string{"haproxy.cfg", "haproxy-kubernetes.cfg"} {
		t.Run(cfg, func(t *testing.T) {
			text, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range required {
				if !strings.Contains(string(text), "\n    "+line) {
					t.Errorf("%s lacks the line %q", cfg, line)
				}
			}
			out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput()
			if err != nil {
				t.Fatalf("haproxy -c -f %s: %v\n%s", cfg, err, out)
			}
			// haproxy -c exits 0 with warnings; a warning here is a mistake
			// in the file (an ignored keyword, a rule in the wrong place).
			if strings.Contains(string(out), "[WARNING]") {
				t.Fatalf("haproxy -c -f %s warns:\n%s", cfg, out)
			}
		})
	}
}
