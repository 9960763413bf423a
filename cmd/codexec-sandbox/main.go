// Command codexec-sandbox is the small helper the namespace sandbox executes
// on every run: `sandbox-init` (join the run's cgroups, drop privileges,
// exec bubblewrap) and `sandbox-landlock` (restrict itself with Landlock
// inside the sandbox, then exec the program), and in subprocess mode
// `sandbox-fsize` (set the file size cap, then exec the program; handled by
// the sandbox package's init). It lives
// next to the codexec binary; codexec falls back to re-executing itself when
// it is missing.
//
// It exists because it starts in about a millisecond: the full codexec binary
// pays several milliseconds of package initialisation (SDK, esbuild, SQLite)
// on every start, and the namespace sandbox starts this helper twice per run.
package main

import (
	"fmt"
	"os"

	"github.com/codexec/codexec/internal/sandbox"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "codexec-sandbox: internal helper of codexec; not for direct use")
		os.Exit(2)
	}
	switch os.Args[1] {
	case sandbox.InitCommand:
		os.Exit(sandbox.RunInit(os.Args[2:]))
	case sandbox.LandlockCommand:
		os.Exit(sandbox.RunLandlock(os.Args[2:]))
	}
	fmt.Fprintf(os.Stderr, "codexec-sandbox: unknown command %q\n", os.Args[1])
	os.Exit(2)
}
