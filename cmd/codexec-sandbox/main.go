// Command codexec-sandbox is the small helper the sandboxes execute on every
// run: `sandbox-init` (join the run's cgroups, drop privileges, exec
// bubblewrap) and `sandbox-landlock` (restrict itself with Landlock inside
// the sandbox, then exec the program — or, for a warm bash, wait for its
// run first) in namespace mode, and `sandbox-fsize` (set the file size
// cap, then exec the program) and `sandbox-runner` (a warm bash's stub:
// wait for the run, then exec bash) in subprocess mode, and `sandbox-watchdog`
// (the one child per server that ends its runs when it dies). Package helper has
// the bodies and the diagram of the whole chain. It lives next to the
// codexec binary; codexec falls back to re-executing itself when it is
// missing.
//
// It exists because it starts in about a millisecond: the full codexec binary
// pays several milliseconds of package initialisation (SDK, esbuild, SQLite)
// on every start, and the namespace sandbox starts this helper twice per run.
package main

import (
	"fmt"
	"os"

	"github.com/codexec/codexec/internal/sandbox/helper"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "codexec-sandbox: internal helper of codexec; not for direct use")
		os.Exit(2)
	}
	if code, ok := helper.Dispatch(os.Args[1:]); ok {
		os.Exit(code)
	}
	fmt.Fprintf(os.Stderr, "codexec-sandbox: unknown command %q\n", os.Args[1])
	os.Exit(2)
}
