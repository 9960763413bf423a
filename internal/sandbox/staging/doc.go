// Package staging gives a sandbox launcher what it must mount for one run
// while only the server can reach it: either bind mounts of the run's
// sources on points of a private, traversable staging directory (bwrap
// runs unprivileged and cannot reach a source below a 0700 directory), or
// detached open_tree clones of them, each assigned a mount point of the
// template namespace (mounttemplate) for the launcher to move it onto.
//
// The staging root is process-wide and reference-counted (Acquire,
// Release). A Stage belongs to one run and is not safe for concurrent use.
package staging
