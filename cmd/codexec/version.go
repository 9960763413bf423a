package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/codexec/codexec/internal/version"
)

// printVersion writes the version lines of `codexec version` (the MCP
// server reports the same version in initialize; package version).
func printVersion(w io.Writer) {
	v := version.Current()
	commit := v.Commit
	if v.Modified {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(w, "codexec %s\ncommit: %s\ndate: %s\ngo: %s %s/%s\n", v.Version, commit, v.Date,
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
