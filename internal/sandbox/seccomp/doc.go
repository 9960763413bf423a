// Package seccomp builds the namespace sandbox's seccomp filter: a
// classic-BPF program, in the kernel's binary layout, that denies the
// system calls a sandboxed program has no use for (mounts, namespaces,
// tracing, keyrings, BPF, module loading, …) and kills foreign-ABI calls.
// It is handed to bubblewrap (--seccomp) and installed by the python
// fork-server's children alike. Linux only; Program is stateless and safe
// for concurrent use.
package seccomp
