package doctor

import (
	"fmt"
	"io"
	"slices"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/hostacl"
)

// sandboxUID is the host uid the isolated backends run code as.
const sandboxUID = 65534

// Depths of the ACL scan: codexec's own and configured roots, and the
// common places a working_dir pointed at.
const (
	deepScan    = 16
	shallowScan = 3
)

// aclRoot is one tree doctor examines for old ACL grants.
type aclRoot struct {
	path  string
	depth int
}

// aclRoots are codexec's data dir and the configured roots, examined in
// depth, and the places a working_dir most often pointed at, examined
// shallowly (the grant was made on the directory itself and inherited by
// directories created in it later).
func aclRoots(cfg config.Config, env app.HostEnv) []aclRoot {
	var out []aclRoot
	deep := append(append([]string{cfg.DataDir}, cfg.WritableRoots...), cfg.AllowedCwdRoots...)
	for _, p := range deep {
		out = append(out, aclRoot{p, deepScan})
	}
	for _, p := range []string{env.Cwd, env.Home, "/tmp", "/opt", "/srv", "/usr/local", "/root", "/"} {
		if p != "" && !slices.ContainsFunc(out, func(r aclRoot) bool { return r.path == p }) {
			out = append(out, aclRoot{p, shallowScan})
		}
	}
	return out
}

// checkACLs reports (and with repair removes) ACL entries that earlier
// versions gave the sandbox user on host directories.
func checkACLs(cfg config.Config, env app.HostEnv, w io.Writer, repair bool) {
	var found []hostacl.Finding
	complete := true
	for _, r := range aclRoots(cfg, env) {
		f, c := hostacl.Scan(r.path, hostacl.Options{UID: sandboxUID, MaxDepth: r.depth, MaxDirs: 20000})
		found = append(found, f...)
		// Common directories are looked at shallowly on purpose; only a
		// deep scan that hit its bound is worth a word.
		complete = complete && (c || r.depth < deepScan)
	}
	found = uniqueFindings(found)
	if len(found) == 0 {
		fmt.Fprintf(w, "host ACLs: no directory grants uid %d access through an ACL (checked the data dir, configured roots and common working directories)\n", sandboxUID)
		return
	}
	fmt.Fprintf(w, "host ACLs: %d directories grant uid %d access through ACL entries left by an earlier codexec version:\n", len(found), sandboxUID)
	for _, f := range found {
		fmt.Fprintf(w, "  %s\n", aclLine(f, repair))
	}
	if !repair {
		fmt.Fprintln(w, "  run `codexec doctor --repair-acls` to remove the ones codexec made, or the commands above")
	}
	if !complete {
		fmt.Fprintln(w, "  (the scan was bounded; deeper directories may carry inherited entries: run getfacl -R on them)")
	}
}

func aclLine(f hostacl.Finding, repair bool) string {
	switch {
	case repair && f.Ours:
		if err := hostacl.Repair(f, sandboxUID); err != nil {
			return "NOT repaired: " + err.Error()
		}
		return "repaired: " + f.Path
	case f.Ours:
		return f.Path + " (made by codexec; remove with: " + f.Command(sandboxUID) + ")"
	}
	return f.Path + " (mixed with other entries; remove the sandbox user's with: " + f.Command(sandboxUID) + ")"
}

func uniqueFindings(in []hostacl.Finding) []hostacl.Finding {
	slices.SortFunc(in, func(a, b hostacl.Finding) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return slices.CompactFunc(in, func(a, b hostacl.Finding) bool { return a.Path == b.Path })
}
