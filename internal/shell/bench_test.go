package shell

import (
	"os/exec"
	"testing"
)

const benchScript = "npm -v && ls -la | grep x; cat $(ls) > out.txt || bash -c 'ls | cat'"

// BenchmarkCheckScript measures the static allowlist check of a typical
// command line; compare with BenchmarkBashStartup (the floor cost of running
// any command) from the same run.
func BenchmarkCheckScript(b *testing.B) {
	allow := NewAllowlist([]string{"npm", "ls", "grep", "cat", "bash"}, testPath)
	for b.Loop() {
		if err := allow.CheckScript(benchScript); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBashStartup is the baseline: starting bash -c true once.
func BenchmarkBashStartup(b *testing.B) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Skip("no bash")
	}
	for b.Loop() {
		if err := exec.Command(bash, "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
