//go:build linux

package namespace

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/codexec/codexec/internal/sandbox/mounttemplate"
)

// The template mount namespace (package mounttemplate). bwrap re-reads
// /proc/self/mountinfo after every bind it makes, and each read formats
// every mount of the namespace it copied: started from the host's (~50
// mounts idle, ~125 under load with the other runs' staging mounts and
// disks) that was a quarter of a run's kernel time. So bwrap starts from a
// small namespace instead, built once per backend, holding only what a
// sandbox may see of the host, all read-only: /usr, the top-level links,
// the etcFiles and the fontconfig cache, the sandbox's /etc/group (the same
// for every run) and an empty /etc/passwd to mount each run's over, and the
// helper at landlockInitPath.
//
// Each run's launcher (sandbox-init, still root) joins it, unshares a
// private copy (~12 mounts), moves the run's host trees (workspace, /tmp
// disk, program directory, spec mounts; detached clones the server made
// with open_tree, internal/sandbox/staging) onto mount points of that copy, and only then
// drops its privileges and executes bwrap. Nothing of a run reaches the
// template: its mounts are in its private copy, and the template's file
// systems are read-only mounts.

// templateOK reports whether bwrap at path is reachable in the template.
func templateOK(o Options) error {
	if !strings.HasPrefix(filepath.Clean(o.Bwrap), "/usr/") {
		return fmt.Errorf("bwrap %s is outside /usr", o.Bwrap)
	}
	// A run's own points: workspace, /tmp, program directory, a few mounts.
	if len(o.ReadOnly)+8 > mounttemplate.Points || (o.CaptureSpec.Enabled() && len(o.CaptureSpec.Files)+8 > mounttemplate.Points) {
		return fmt.Errorf("%d read-only directories leave too few template mount points", len(o.ReadOnly))
	}
	return nil
}

// openTemplate builds the backend's template namespace, if bwrap can start
// from one, with an empty file at each of placeholders (the captured
// network's files in /etc, bound over them per run).
func openTemplate(o Options, scratch string, placeholders []string) (*mounttemplate.Template, error) {
	if err := templateOK(o); err != nil {
		return nil, err
	}
	c := mounttemplate.Config{
		Scratch: scratch,
		Dirs:    []string{"/usr"},
		Links:   rootLinks,
		Files:   append(append([]string{}, etcFiles...), fontCache),
		Write:   []mounttemplate.File{{Path: "/etc/passwd"}, {Path: "/etc/group", Data: []byte(groupData(o.GID))}},
	}
	for _, p := range placeholders {
		c.Write = append(c.Write, mounttemplate.File{Path: p})
	}
	if !o.NoLandlock {
		c.Helper, c.HelperAt = o.Exe, landlockInitPath
	}
	return mounttemplate.Open(c)
}
