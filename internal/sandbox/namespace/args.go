//go:build linux

package namespace

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/staging"
)

// rootLinks are the top-level entries that are symlinks into /usr on merged
// /usr systems (or real directories elsewhere).
var rootLinks = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the only host /etc entries a sandbox sees (read-only): the
// dynamic linker cache, time zone, name service and alternatives links, TLS
// roots, font configuration (each bind costs ~0.2 ms per run, so the list is
// short). passwd and group are synthesised.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/hosts", "/etc/alternatives", "/etc/ssl",
	"/etc/fonts",
}

// fontCache is the system's fontconfig cache, built by fc-cache when fonts
// are installed. Seen read-only with /etc/fonts, font lookups (matplotlib
// asks fc-list) find valid caches and write none: without them fontconfig
// prints "Fontconfig error" and writes a cache of every font directory into
// $HOME/.cache, which is the workspace, so it came back as artifacts.
const fontCache = "/var/cache/fontconfig"

// landlockInitPath is where the helper binary is visible in the sandbox.
const landlockInitPath = "/opt/codexec/init"

// warmDir is the placeholder a namespace runner has where its workspace
// will be bound; its Landlock rule grants full access beneath it.
const warmDir = "/.workspace"

// bwrapArgs accumulates bubblewrap arguments and the files passed to it as
// inherited descriptors (fd 3 + index).
type bwrapArgs struct {
	n     *Backend
	stage *staging.Stage
	// refs makes fd return references a pooled launcher resolves.
	refs bool
	// warm builds a runner started before its workspace is known: an empty
	// placeholder (warmDir) takes the workspace's place (see bind.go).
	warm bool
	// exec makes the Landlock step a warm runner's stub (an exec runner,
	// helper.RunnerOption) instead of only keeping its control socket.
	exec bool
	// zygote builds a python fork-server's sandbox (zygote.go): nested user
	// namespaces allowed, no seccomp filter or Landlock step of its own (its
	// children apply them), /etc/passwd a plain file the children mount
	// over, and zygoteRoot (if set) created as their workspace root.
	zygote     bool
	zygoteRoot string
	// ownNet: sandbox-init starts in a network namespace of the server's
	// (capture.go), which bwrap shares instead of making an empty one.
	ownNet bool
	// seccompFd is the descriptor number of the seccomp program handed to a
	// zygote.
	seccompFd string
	args      []string
	files     []*os.File
	// plan is the launcher's template plan (helper.RootOption), set by
	// build in template mode.
	plan string
}

func (b *bwrapArgs) add(a ...string) { b.args = append(b.args, a...) }

// fd registers f as an inherited descriptor and returns its number as seen by
// bwrap.
func (b *bwrapArgs) fd(f *os.File) string {
	b.files = append(b.files, f)
	if b.refs {
		return helper.FdRef + strconv.Itoa(len(b.files)-1)
	}
	return strconv.Itoa(2 + len(b.files))
}

func (b *bwrapArgs) CloseFiles() {
	for _, f := range b.files {
		_ = f.Close()
	}
}

// build produces the whole bwrap command line up to the program: it ends
// with the in-sandbox Landlock step (see helper.LandlockCommand), so spec.Argv is
// appended by the caller. In template mode the files end with the template
// namespace and the run's trees, which b.plan names for the launcher.
func (b *bwrapArgs) build(spec sandbox.Spec) error {
	if err := b.buildArgs(spec); err != nil {
		return err
	}
	return b.attachTemplate()
}

// attachTemplate appends the template namespace and the run's trees to the
// files and describes them in b.plan: "NS K:POINT…", K indexes b.files.
func (b *bwrapArgs) attachTemplate() error {
	if b.n.tmpl == nil {
		return nil
	}
	ns, err := b.n.tmpl.Join()
	if err != nil {
		return fmt.Errorf("sandbox: template namespace: %w", err)
	}
	plan := []string{strconv.Itoa(len(b.files))}
	b.files = append(b.files, ns)
	for _, t := range b.stage.TakeTrees() {
		plan = append(plan, strconv.Itoa(len(b.files))+":"+t.Dest)
		b.files = append(b.files, t.F)
	}
	b.plan = strings.Join(plan, " ")
	return nil
}

func (b *bwrapArgs) buildArgs(spec sandbox.Spec) error {
	uid, gid := strconv.Itoa(b.n.opts.UID), strconv.Itoa(b.n.opts.GID)
	b.add("--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup")
	if !b.ownNet {
		b.add("--unshare-net")
	}
	if !b.zygote {
		b.add("--disable-userns")
	}
	b.add("--die-with-parent", "--new-session", "--uid", uid, "--gid", gid,
		"--hostname", "codexec", "--ro-bind", "/usr", "/usr")
	b.rootLinks()
	b.etc()
	if err := b.captureFiles(); err != nil {
		return err
	}
	b.add("--ro-bind-try", fontCache, fontCache)
	if err := b.identity(cmp.Or(spec.Dir, warmDir)); err != nil {
		return err
	}
	b.add("--proc", "/proc", "--dev", "/dev", "--size", strconv.FormatInt(shmSize(spec), 10), "--perms", "1777", "--tmpfs", "/dev/shm")
	if err := b.tmp(spec); err != nil {
		return err
	}
	dir := spec.Dir
	switch {
	case b.zygote:
		return b.zygoteTail(spec)
	case b.warm:
		dir = warmDir
		b.add("--perms", "0755", "--dir", warmDir)
	default:
		if err := b.workspace(spec, sandbox.WorkspaceReadOnly(spec, b.n.opts.OwnedRoot)); err != nil {
			return err
		}
	}
	if err := b.readOnly(spec); err != nil {
		return err
	}
	if !b.n.opts.NoLandlock {
		exe := landlockInitPath // in the template
		if b.n.tmpl == nil {
			var err error
			if exe, err = b.stage.Bind(b.n.opts.Exe); err != nil {
				return fmt.Errorf("sandbox: landlock helper: %w", err)
			}
		}
		b.add("--ro-bind", exe, landlockInitPath)
	}
	sc, err := dataFile(b.n.seccomp)
	if err != nil {
		return err
	}
	b.add("--seccomp", b.fd(sc), "--chdir", dir, "--")
	if !b.n.opts.NoLandlock {
		b.add(landlockInitPath, helper.LandlockCommand)
		if b.n.noCgroup {
			b.add(helper.RlimitsOption, rlimits(spec.Limits))
		}
		switch {
		case b.exec:
			b.add(helper.RunnerOption)
		case b.warm:
			b.add(helper.KeepCtl)
		}
		b.add(dir, "/tmp", "/dev/shm", "--")
	}
	return nil
}

// zygoteTail ends a zygote's command line: its children's workspace root,
// the read-only directories, and the seccomp program as a plain descriptor.
func (b *bwrapArgs) zygoteTail(spec sandbox.Spec) error {
	if b.zygoteRoot != "" {
		b.add("--perms", "0755", "--dir", b.zygoteRoot)
	}
	if err := b.readOnly(spec); err != nil {
		return err
	}
	sc, err := dataFile(b.n.seccomp)
	if err != nil {
		return err
	}
	b.seccompFd = b.fd(sc)
	b.add("--chdir", "/", "--")
	return nil
}

// shmSize bounds a sandbox's /dev/shm (POSIX shared memory and semaphores,
// which python's multiprocessing needs): the disk limit, at most 64 MiB, as
// a container engine gives. Its pages count against the memory limit.
func shmSize(spec sandbox.Spec) int64 {
	if d := spec.Limits.DiskBytes; d > 0 && d < 64<<20 {
		return d
	}
	return 64 << 20
}

// tmp gives the sandbox its /tmp: the spec's TmpDir (a bounded disk shared
// with the workspace) through a staging mount, else a size-limited tmpfs.
func (b *bwrapArgs) tmp(spec sandbox.Spec) error {
	if spec.TmpDir != "" {
		p, err := b.stage.Bind(spec.TmpDir)
		if err != nil {
			return fmt.Errorf("sandbox: /tmp: %w", err)
		}
		b.add("--bind", p, "/tmp")
		return nil
	}
	b.add("--size", strconv.FormatInt(tmpBytes(spec), 10), "--perms", "1777", "--tmpfs", "/tmp")
	return nil
}

// etc binds the host /etc files a sandbox sees. The template has them in
// its /etc, so there one recursive bind does (one mountinfo read of bwrap's
// instead of one per file), except for a zygote, which needs a writable
// /etc to create its /etc/passwd in.
func (b *bwrapArgs) etc() {
	if b.n.tmpl != nil && !b.zygote {
		b.add("--ro-bind", "/etc", "/etc")
		return
	}
	for _, f := range etcFiles {
		b.add("--ro-bind-try", f, f)
	}
}

// captureFiles binds the CaptureSpec's files read-only over their places
// (capture.go), through staging mounts: their host directory may be out of
// the sandbox uid's reach.
func (b *bwrapArgs) captureFiles() error {
	for _, f := range b.n.files {
		p, err := b.stage.Bind(f.host)
		if err != nil {
			return fmt.Errorf("sandbox: captured network file %s: %w", f.host, err)
		}
		b.add("--ro-bind", p, f.dest)
	}
	return nil
}

func (b *bwrapArgs) rootLinks() {
	for _, l := range rootLinks {
		fi, err := os.Lstat(l)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(l); err == nil {
				b.add("--symlink", t, l)
			}
		case fi.IsDir():
			b.add("--ro-bind", l, l)
		}
	}
}

// identity gives the sandbox user a name and home in /etc/passwd and group.
func (b *bwrapArgs) identity(home string) error {
	files := []struct{ data, dest string }{{passwdData(b.n.opts.UID, b.n.opts.GID, home), "/etc/passwd"}}
	if b.n.tmpl == nil || b.zygote { // else the template's /etc has it
		files = append(files, struct{ data, dest string }{groupData(b.n.opts.GID), "/etc/group"})
	}
	for _, d := range files {
		f, err := dataFile([]byte(d.data))
		if err != nil {
			return err
		}
		if b.zygote && d.dest == "/etc/passwd" {
			b.add("--perms", "0644", "--file", b.fd(f), d.dest) // mounted over per child
			continue
		}
		b.add("--ro-bind-data", b.fd(f), d.dest)
	}
	return nil
}

// groupData is the sandbox's /etc/group: root and the sandbox group.
func groupData(gid int) string { return "root:x:0:\nsandbox:x:" + strconv.Itoa(gid) + ":\n" }

// passwdData is the sandbox's /etc/passwd: root and the sandbox user.
func passwdData(uid, gid int, home string) string {
	return "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:" + strconv.Itoa(uid) + ":" + strconv.Itoa(gid) +
		":codexec sandbox:" + home + ":/bin/sh\n"
}

// workspace binds the workspace at its host path, writable unless ro
// (through a staging mount, since the sandbox uid may not be able to
// traverse its parents; see internal/sandbox/staging) and masks forbidden paths below it.
// A caller's directory with spec.DirOwner is an idmapped clone instead.
func (b *bwrapArgs) workspace(spec sandbox.Spec, ro bool) error {
	dir := spec.Dir
	p, err := b.stageWorkspace(spec, ro)
	if err != nil {
		return fmt.Errorf("sandbox: workspace: %w", err)
	}
	if ro {
		b.add("--ro-bind", p, dir)
	} else {
		b.add("--bind", p, dir)
	}
	for _, m := range sandbox.MasksBelow(b.n.opts.Mask, dir, dir, b.n.reachUID(spec)) {
		if m.Dir {
			b.add("--perms", "0000", "--tmpfs", m.Path)
		} else {
			b.add("--ro-bind", "/dev/null", m.Path)
		}
	}
	return nil
}

// readOnly binds the program directory, the spec's mounts and the
// configured read-only prefixes.
func (b *bwrapArgs) readOnly(spec sandbox.Spec) error {
	type bind struct{ host, target string }
	var binds []bind
	if spec.ProgramDir != "" {
		binds = append(binds, bind{spec.ProgramDir, sandbox.ProgramPath})
	}
	for _, m := range spec.Mounts {
		t := m.Target
		if t == "" {
			t = m.Host
		}
		binds = append(binds, bind{m.Host, t})
	}
	for _, p := range b.n.opts.ReadOnly {
		binds = append(binds, bind{p, p})
	}
	for _, bd := range binds {
		if spec.Dir != "" && strings.HasPrefix(bd.target, spec.Dir+"/") && !sandbox.CanReach(spec.Dir, bd.target, b.n.reachUID(spec)) {
			continue // inside the workspace where the sandbox cannot go anyway
		}
		p, err := b.stage.Bind(bd.host)
		if err != nil {
			return fmt.Errorf("sandbox: mount %s: %w", bd.host, err)
		}
		b.add("--ro-bind", p, bd.target)
	}
	return nil
}

// dataFile returns the read end of a pipe holding data (which must fit the
// pipe buffer, 64 KiB).
func dataFile(data []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.Write(data); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}
