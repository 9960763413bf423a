// Package rootless lets codexec, started by a normal user, run the
// namespace sandbox as root mode does: the server re-executes itself in a
// user and mount namespace of its own, owned by that user, where it keeps
// the user's ids (so files it writes are the user's and os.Getuid is the
// user's) and holds capabilities that reach only what that namespace owns
// (its mount table, the network namespaces it makes, processes it starts).
// Nothing on the host is reachable beyond the user's own rights.
//
//	codexec (user U) ──clone(NEWUSER|NEWNS, U→U, ambient caps)──▶ codexec serve (inside)
//	   forwards signals, exits with the child's status        builds the namespace backend
//
// Probe says whether this host lets the user do it (unprivileged user
// namespaces, bubblewrap, Ubuntu's AppArmor restriction) and, if not, why
// and how to fix it. Inside reports whether this process is the re-executed
// server.
package rootless
