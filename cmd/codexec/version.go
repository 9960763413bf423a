package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildVersion is what `codexec version` reports, read from the build
// information the Go toolchain embeds.
type buildVersion struct {
	Version  string // module version, or "devel" for a build without one
	Commit   string // VCS revision, or "unknown"
	Date     string // commit time of that revision (RFC 3339), or "unknown"
	Modified bool   // the work tree had uncommitted changes
}

// readVersion extracts the version from build info; ok false (no build
// info) gives the fallbacks. Go builds carry no build time (builds are
// reproducible): the date is the commit's, which dates the code.
func readVersion(bi *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: "devel", Commit: "unknown", Date: "unknown"}
	if !ok || bi == nil {
		return v
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Date = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// printVersion writes the version lines of `codexec version`.
func printVersion(w io.Writer) {
	v := readVersion(debug.ReadBuildInfo())
	commit := v.Commit
	if v.Modified {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(w, "codexec %s\ncommit: %s\ndate: %s\ngo: %s %s/%s\n", v.Version, commit, v.Date,
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
