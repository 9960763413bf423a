// Package warm keeps warm runners for every sandbox backend. Starting an isolated interpreter costs a sandbox (namespaces,
// mounts, cgroup, Landlock) plus the interpreter's own start-up, ~25 ms on the
// request path. A warm runner is that whole thing done ahead of time: a
// sandboxed python or node that has finished starting and waits on a control
// socket (fd 3) for exactly one run. A run takes a runner, binds its
// workspace into it, hands it cwd, environment, code and arguments, and the
// runner executes the code as `python -c` / `node -e` would. When the run
// ends the runner is destroyed like any other run (group kill, cgroup and
// mounts removed); nothing is ever reused, so a run's isolation is the same
// as a cold start's by construction: its own namespaces, /tmp, cgroup,
// seccomp filter, Landlock domain and interpreter process.
//
// bash starts in about a millisecond, so what a warm bash saves is the
// sandbox: its runner is an exec runner (Request.Exec), the sandbox with
// the helper waiting in bash's place (helper.RunnerCommand), which
// executes `bash -c CODE ARGS…` in the run's cwd and environment when it
// gets its run — the same execve a cold run ends with.
//
// Runners are started in the background, one kind (interpreter, flags,
// environment minus HOME, mounts, limits) at a time, with a low CPU weight
// until taken, so refills never take CPU from running code. A kind keeps
// Size runners ready, and grows up to Burst while runs come faster than it
// refills (see Pool.growLocked).
//
// Each backend has its own runner type (a Stub plus what it holds) behind
// the Runner interface; Pool keeps them per kind (take, refill, expire,
// stats) and Serve starts a run warm or cold. The wire to a runner's stub
// is described in package helper.
package warm
