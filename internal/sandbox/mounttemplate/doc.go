// Package mounttemplate builds and keeps a template mount namespace: a
// small, read-only tree holding only what a sandbox may see of the host,
// which a sandbox launcher joins and copies (unshare) before starting
// bubblewrap, so that bubblewrap's per-bind re-reads of
// /proc/self/mountinfo format a dozen mounts instead of the host's whole
// table. Its layout:
//
//	/            tmpfs, read-only, 0755 root
//	Config.Dirs  host directories, read-only and recursive ("/usr")
//	Config.Links the host's top-level links as links (directories bound)
//	Config.Files host files and directories, read-only, if present
//	Config.Write files created with fixed contents ("/etc/group")
//	Config.Helper at Config.HelperAt, read-only
//	/proc, /dev  a proc of the host's pid namespace and the host's /dev
//	/tmp         empty: bubblewrap's scratch mount point
//	/.s/dK /.s/fK  empty directories and files: a launcher's mount points
//
// The namespace lives as long as a descriptor of it is open; there is no
// holder process, so it is freed however its owner ends. A Template
// rebuilds it when one of Config.Files is replaced on the host (they are
// bound by inode).
package mounttemplate

import (
	"errors"
	"strconv"
)

// Config says what a template holds (see the package comment).
type Config struct {
	// Scratch is an existing host directory the template's root tmpfs is
	// mounted on, in the builder's private namespace only.
	Scratch string
	Dirs    []string
	Links   []string
	Files   []string
	Write   []File
	// Helper is a host file shown at HelperAt ("" for none).
	Helper, HelperAt string
}

// File is a file created in the template with Data.
type File struct {
	Path string
	Data []byte
}

// Points is how many directory (and file) mount points a template has.
const Points = 24

// pointsDir holds the mount points.
const pointsDir = "/.s"

// Point is the template's K-th directory or file mount point.
func Point(dir bool, k int) string {
	if dir {
		return pointsDir + "/d" + strconv.Itoa(k)
	}
	return pointsDir + "/f" + strconv.Itoa(k)
}

// ErrFull means a run needs more mount points than the template has.
var ErrFull = errors.New("too many mounts for the template namespace")
