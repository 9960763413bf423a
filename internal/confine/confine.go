// Package confine lets the server touch files on a sandbox's behalf with
// exactly the sandbox user's rights, never its own.
//
// The server runs as root; code runs as an unprivileged user. Whenever the
// server reads what a run left (artifacts, downloads, listings) or writes
// into a workspace (uploads), it does so through an Identity: the file
// system then checks the sandbox user's uid, gid and ACL entries, with no
// supplementary groups and none of root's overriding capabilities, so a file
// the sandbox could not read is never read for it, and a directory it could
// not write is never written for it. Paths beneath a workspace are further
// confined by the caller (internal/files opens them with openat2 beneath the
// workspace, never through a link).
package confine

// Identity is whose file-system rights an operation runs with. The zero
// value is the server's own identity (subprocess mode, where code already
// runs with the server's rights, and codexec's private directories).
// Identities are values; copying is safe.
type Identity struct {
	uid, gid int
	set      bool
}

// As is the identity of host uid and gid.
func As(uid, gid int) Identity { return Identity{uid: uid, gid: gid, set: true} }

// IsServer reports whether id is the server's own identity.
func (id Identity) IsServer() bool { return !id.set }

// IDs returns the uid and gid (0, 0 for the server's identity).
func (id Identity) IDs() (uid, gid int) { return id.uid, id.gid }

// Do runs fn with id's file-system rights and returns its error. For the
// server's identity fn runs on the calling goroutine. Otherwise fn runs on
// one of a few goroutines kept for id, each locked for good to an OS thread
// whose file-system ids are id's, so the switch never leaks into other
// goroutines. Safe for concurrent use. fn must not call Do (it could wait
// for a thread it holds) nor start goroutines that touch files (they would
// run with the server's rights).
func (id Identity) Do(fn func() error) error {
	if !id.set {
		return fn()
	}
	return doAs(id, fn)
}
