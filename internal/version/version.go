// Package version says which build of codexec is running, from the build
// information the Go toolchain embeds in every binary: the module version
// (set by `go install …@v1.2.3`, "devel" for a work-tree build), the VCS
// commit and its date. `codexec version`, the MCP initialize answer
// (serverInfo.version) and the client name codexec gives upstream servers
// all read it here, so they always agree.
package version

import "runtime/debug"

// Info is one build's identity.
type Info struct {
	Version  string // module version, or "devel" for a build without one
	Commit   string // VCS revision, or "unknown"
	Date     string // commit time of that revision (RFC 3339), or "unknown"
	Modified bool   // the work tree had uncommitted changes
}

// FromBuildInfo extracts the Info from build info; ok false (no build info)
// gives the fallbacks. Go builds carry no build time (builds are
// reproducible): the date is the commit's, which dates the code.
func FromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	v := Info{Version: "devel", Commit: "unknown", Date: "unknown"}
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

// Current is the running binary's Info.
func Current() Info { return FromBuildInfo(debug.ReadBuildInfo()) }
