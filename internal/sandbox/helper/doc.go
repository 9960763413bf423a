// Package helper is the child side of every re-execution the sandboxes do,
// and the one place where every wire between the server (parent) and its
// sandboxed children is described. The bodies here run in the helper binary
// (cmd/codexec-sandbox, or codexec itself when the helper is missing) under
// the hidden verbs of commands.go; both mains dispatch every verb
// themselves, first thing, and no package does it from an init function.
//
// # The chain (namespace mode)
//
//	codexec (root, server)
//	  │ fork+exec, stdio pipes, extra fds (seccomp, passwd/group data, stages);
//	  │ with a captured network, CLONE_NEWNET: a network namespace owned by
//	  │ the server's user namespace
//	  ▼
//	codexec-sandbox sandbox-init [--capture K SOCKETS] [--root PLAN] UID GID CGROUP.PROCS… -- BWRAP ARGS…   (RunInit)
//	  │ joins the run's cgroups as root; with --capture (CaptureOption)
//	  │ brings lo up, makes the listening sockets and sends them to the
//	  │ server (below), closing its copies; with --root (RootOption) joins the
//	  │ server's template mount namespace, unshares a private copy and
//	  │ mounts the run's detached trees on its points; drops to UID/GID for
//	  │ good (this thread only: raw setresuid/setresgid), no_new_privs,
//	  │ pdeathsig; exec
//	  ▼
//	bwrap --unshare-user … --seccomp FD --chdir DIR --
//	  │ new user/pid/net/ipc/uts/mount/cgroup namespaces (with a captured
//	  │ network: no new network namespace, it stays in sandbox-init's,
//	  │ which the program, without capabilities in the server's user
//	  │ namespace, cannot reconfigure), tmpfs root, read-only /usr,
//	  │ workspace, /tmp; seccomp filter; exec
//	  ▼
//	/opt/codexec/init sandbox-landlock [--keep-ctl|--runner] RW_DIR… -- PROGRAM ARGS…   (RunLandlock)
//	  │ Landlock domain (read/exec everywhere, write in RW_DIRs and /dev,
//	  │ signals and abstract sockets scoped), descriptors > 2 (> 3 with
//	  │ --keep-ctl or --runner) close-on-exec, PWD dropped; with --runner
//	  │ it waits for its run first (exec runners, below); exec
//	  ▼
//	program (uid 65534, no capabilities)
//
// Beside every chain, each server has one watchdog child (below) that ends
// its runs when it dies.
//
// Subprocess mode has a one-step chain: codexec → codexec-sandbox
// sandbox-fsize BYTES -- PROGRAM (RunFsize: RLIMIT_FSIZE, exec), taken only
// when the run has a disk limit. Docker mode re-executes nothing: the
// container CLI is the child.
//
// Owner mounts of callers' directories (package idmap, namespace and docker
// modes) start codexec-sandbox sandbox-hold once per directory owner, in a
// fresh user namespace whose id maps the server writes; the server opens
// the namespace and closes the child's stdin, and it exits.
//
// # The wires
//
// Pooled launcher (namespace mode; SendLaunch → receiveLaunch). A
// `sandbox-init --pooled` waits, already in its cgroup and unprivileged, on
// fd 3, a unix stream socket:
//
//	parent ──sendmsg: 8-byte little-endian payload length
//	                  + SCM_RIGHTS [stdin, stdout, stderr, extra…]──▶ launcher
//	parent ──JSON {"Argv": [...], "Env": [...], "Root": PLAN, "Net": SOCKETS} (the payload)──▶ launcher
//	launcher ──"C" + SCM_RIGHTS [captured sockets]──────────────▶ parent   only if Net lists sockets
//
// Arguments equal to FdRef+K ("\x00fd:K") become the launcher's number for
// extra descriptor K. The launcher puts stdio on 0–2, carries out the
// template plan if any (as root), sets up its network namespace if the
// payload has "Net" (a launcher the server started with CLONE_NEWNET):
// loopback up and the sockets, sent back as below, after which it closes
// fd 3; then it drops its privileges and execs Argv[0].
//
// Captured sockets (namespace mode, a backend with a CaptureSpec; Sockets,
// sendSockets → ReceiveSockets). The first process of a sandbox, root in
// the network namespace it starts in, makes the listening sockets Sockets
// lists and hands them to the server, which serves them outside (package
// sandbox, egress.go) or closes them:
//
//	sandbox-init ──"C" + SCM_RIGHTS [proxy?, dns udp?, dns tcp?, port…]──▶ parent
//
// on extra descriptor K of --capture K (a socketpair), or on a pooled
// launcher's fd 3. A forked python child (below) sends the same
// descriptors attached to its "R". The order is Sockets.List's; the
// sender closes its copies at once.
//
// Warm runner control socket (all modes; EncodeRun, ReadStatus). A runner is
// an interpreter whose -c/-e program is a stub (runner_python.py,
// runner_node.js, with python_run.py) waiting on fd 3 (a socketpair; in
// docker mode a unix socket the stub connects to, in the runner's
// directory bound at /workspace):
//
//	runner ──"R"──────────────────────────────────────▶ parent   ready
//	parent ──"F" + SCM_RIGHTS [stdout, stderr]────────▶ runner   python only: fresh output pipes
//	parent ──"<len>\n" cwd\0 n\0 env…\0 code\0 args…──▶ runner   the one run (EncodeRun)
//	runner ──"X<status>\n"────────────────────────────▶ parent   python and node: exit status, after
//	                                                             closing its outputs (ReadStatus)
//
// A run whose stub reports a status ends for the server once that status
// and the end of both outputs are in; teardown goes on in the background.
//
// Exec runners (bash; RunnerCommand, or sandbox-landlock --runner in
// namespace mode) are the helper in the interpreter's place, on the same
// wire up to the run: "R", then "F" + [stdout, stderr] (namespace mode;
// optional), then the run (EncodeRun), after which the helper executes
// PROGRAM ARGS… CODE RUN_ARGS… and the socket closes with the exec. No
// status comes: the run's status is the program's process's (bwrap's in
// namespace mode).
//
// Python zygote (namespace mode, fork-server; zygote_python.py). The zygote
// is a sandboxed python with fd 3 a socketpair:
//
//	zygote ──"Z"──────────────────────────────────────▶ parent   ready
//	parent ──"F" + SCM_RIGHTS [stdin, stdout, stderr,
//	          runner ctl, cgroup.procs…]───────────────▶ zygote   clone one runner
//	program ──"R" (+ SCM_RIGHTS [captured sockets]), then takes its run
//	          (EncodeRun) on the runner ctl
//	zygote  ──4-byte native-endian wait status──────────▶ parent  on the runner ctl
//
// The program is cloned in its own namespaces (pid 1 of its pid namespace).
// It joins the run's cgroup (through the cgroup.procs descriptors the
// parent opened), mounts its private /tmp and /proc, brings lo up, makes
// the captured sockets when the zygote was started with some (its SOCKETS
// argument; bound with the capabilities it holds in its own user
// namespace, sent with its "R"), and restricts itself (Landlock,
// capabilities, no_new_privs, seccomp) before running the code.
// The zygote reaps it (one pidfd per child) and reports its wait status.
//
// Node runners in containers (docker mode; container/warm_node_linux.go). Node
// cannot receive descriptors over a socket, so the parent makes five FIFOs
// in the runner's directory and the container's shell opens them for node:
// stdin (fd 0), stdout (1), stderr (2), the run message (3, EncodeRun) and
// "R"/"X<status>\n" (4).
//
// Warm container deadline (docker mode; container/life_warm_linux.go): a FIFO whose
// server end is written with the run's deadline at take time and whose
// loss of writer (a dead server) ends the container.
//
// Container gate (docker mode with a captured network; container/gate_linux.go):
// a cold container's first process is a shell that writes "up\n" to the
// FIFO "ready" and waits for "go\n" on the FIFO "go" (both in a directory
// bound at /run/codexec-gate) before it execs the run's command; between
// the two the server makes the captured sockets in the container's network
// namespace. The loss of the go FIFO's writer (a dead server) makes the
// shell exit 125.
//
// Watchdog (all modes; proc.StartWatchdog → RunWatchdog, watchdog.go). One
// `sandbox-watchdog MARKER_PREFIX` per server, in its own process group,
// stdin a pipe whose write end only the server holds (close-on-exec):
//
//	server ──"group PGID\n" / "ungroup PGID\n"────────▶ watchdog  a run's process group (subprocess
//	                                                             runs and warm runners, package installs)
//	server ──"containers \"CLI\" \"LABEL=VALUE\"\n"────▶ watchdog  docker mode's containers
//	server ──"cgroup \"DIR\"\n"──────────────────────────▶ watchdog  namespace mode's control groups
//	server ──"clean\n"────────────────────────────────▶ watchdog  a clean exit: containers are gone
//	server ──end of file (exit, kill -9, crash)────────▶ watchdog  kills the groups, every process
//	                                                             beneath DIR and every process
//	                                                             whose environment has MARKER_PREFIX,
//	                                                             kills and removes the labelled
//	                                                             containers, exits
//
// Nothing flows back. A watchdog that dies while the server lives is
// started again with every registration.
//
// MARK frames. Sessions' and code mode's framed JSON over a program's
// stdout (MARK-framed demultiplexing) is not a helper wire: it runs over the
// ordinary stdio of any backend and lives in internal/frame.
package helper
