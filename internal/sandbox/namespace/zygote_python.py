def __codexec_zygote():
    # Python fork-server (see zygote.go). Runs as the -c program of a python
    # that has finished its start-up, inside a sandbox without Landlock or
    # seccomp of its own, and runs only this code. For each "F" message on
    # fd 3 (with the run's stdin, stdout, stderr, control socket and cgroup
    # files attached) it forks a child that joins the run's cgroup, makes its
    # own user, mount, pid, ipc, uts and network namespaces, mounts a private
    # /tmp (and workspace root), and forks the program process (pid 1 of its
    # namespace, with a fresh /proc). The program process reports "R", waits
    # for the run, restricts itself (Landlock domain of its own, no
    # capabilities, no_new_privs, the sandbox's seccomp filter, no
    # descriptors above stdio) and executes the code as `python -c` would.
    # The first child waits for it and reports its wait status.
    import os, sys
    fresh = set(sys.modules)
    import ctypes, gc, signal, socket, struct
    argv = sys.argv[1:]
    seccomp_fd, tmp_size, ws_root = int(argv[0]), int(argv[1]), argv[2]
    nr_capset, uid, gid = int(argv[3]), int(argv[4]), int(argv[5])
    with os.fdopen(seccomp_fd, "rb") as f:
        bpf = f.read()
    os.closerange(4, 4096)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]

    def check(rc, what):
        if rc < 0:
            e = ctypes.get_errno()
            raise OSError(e, what + ": " + os.strerror(e))

    def mount(src, dst, fstype, flags, data):
        check(libc.mount(src, dst.encode(), fstype, flags, data), "mount " + dst)

    def write_file(path, data):
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
    NEWNS, NEWUTS, NEWIPC = 0x20000, 0x4000000, 0x8000000
    NEWUSER, NEWPID, NEWNET = 0x10000000, 0x20000000, 0x40000000

    def namespaces():
        check(libc.unshare(NEWUSER), "unshare user")
        write_file("/proc/self/uid_map", b"%d %d 1" % (uid, uid))
        write_file("/proc/self/setgroups", b"deny")
        write_file("/proc/self/gid_map", b"%d %d 1" % (gid, gid))
        check(libc.unshare(NEWNS | NEWPID | NEWIPC | NEWUTS | NEWNET), "unshare")
        mount(b"none", "/", None, MS_REC | MS_PRIVATE, None)
        opts = b"size=%d,mode=1777" % tmp_size
        mount(b"tmpfs", "/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, opts)
        if ws_root:
            mount(b"tmpfs", ws_root, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")

    def landlock_base():
        # The ruleset's access and the rules for the zygote's own read-only
        # trees, which children share (rules bind to inodes).
        abi = libc.syscall(444, None, 0, 1)
        if abi < 6:
            raise OSError("Landlock ABI %d < 6" % abi)
        fs_all = (1 << 13) - 1 | 1 << 13 | 1 << 14 | (1 << 15 if abi >= 5 else 0)
        attr = struct.pack("QQQ", fs_all, 0, 3)  # scoped: signal, abstract unix
        read = 1 | 4 | 8  # execute, read file, read dir
        shared = []
        for path, access in (("/", read), ("/dev", read | 2 | (fs_all & 1 << 15))):
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            shared.append((path, struct.pack("=Qi", access, pfd)))
        return fs_all, attr, shared

    def landlock(rw):
        ruleset = libc.syscall(444, ll_attr, len(ll_attr), 0)
        check(ruleset, "landlock_create_ruleset")
        rules = list(ll_shared)
        for d in rw:
            pfd = os.open(d, os.O_PATH | os.O_CLOEXEC)
            rules.append((d, struct.pack("=Qi", ll_fs_all, pfd)))
        for path, rule in rules:
            check(libc.syscall(445, ruleset, 1, rule, 0), "landlock rule " + path)
        check(libc.prctl(38, 1, 0, 0, 0), "no_new_privs")
        check(libc.syscall(446, ruleset, 0), "landlock_restrict_self")
        # The rule descriptors go with closerange() after this.

    # What every child needs for its restriction is built once here, so a
    # child copies no page for it (each page a fork's child writes is a copy).
    ll_fs_all, ll_attr, ll_shared = landlock_base()
    with open("/proc/sys/kernel/cap_last_cap") as f:
        all_caps = range(int(f.read()) + 1)
    cap_header, cap_data = struct.pack("Ii", 0x20080522, 0), bytes(24)
    seccomp_prog = ctypes.create_string_buffer(bpf, len(bpf))
    seccomp_fprog = struct.pack("HxxxxxxQ", len(bpf) // 8, ctypes.addressof(seccomp_prog))

    def drop_privileges():
        for cap in all_caps:
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
        check(libc.syscall(nr_capset, cap_header, cap_data), "capset")
        check(libc.prctl(22, 2, seccomp_fprog, 0, 0), "seccomp")

    def program():
        # Everything but the run itself happens before "R", off the run's
        # path. The workspace is mounted later by the server below /tmp or
        # ws_root, whose rules cover it (Landlock checks a mount point's
        # parent, not the mount point).
        mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        landlock(["/tmp"] + ([ws_root] if ws_root else []))
        drop_privileges()
        os.closerange(4, 1 << 30)
        for name in zygote_modules:
            del sys.modules[name]
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.write(3, b"R")
        gc.unfreeze()
        return __codexec_read_run()

    def first_child(fds):
        # fds: stdin, stdout, stderr, control socket, cgroup.procs files.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for p in fds[4:]:
            os.write(p, b"0")
            os.close(p)
        for i, fd in enumerate(fds[:4]):
            os.dup2(fd, i)
        for fd in fds[:4]:
            if fd > 3:
                os.close(fd)
        namespaces()
        pid = os.fork()
        if pid == 0:
            return program()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_IGN)
        os.closerange(0, 3)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        os.write(3, struct.pack("i", status))
        os._exit(0)

    ctl = socket.socket(fileno=3)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    # Warm, once, what every run's first steps touch (the user site lookup
    # with no home, exec of a string, stdout), so children share it instead
    # of each building its own copy.
    import site
    os.environ.clear()
    os.environb[b"HOME"] = b"/nonexistent"
    site.USER_BASE = site.USER_SITE = None
    os.path.isdir(site.getusersitepackages())
    os.environ.clear()
    exec("print('', end='')", {})
    sys.stdout.flush()
    zygote_modules = sorted(set(sys.modules) - fresh)
    # Keep the collector off the zygote's objects in children (each page it
    # touched would be copied); children unfreeze before the run.
    gc.freeze()
    os.write(3, b"Z")
    while True:
        msg, fds, _, _ = socket.recv_fds(ctl, 16, 16)
        if not msg:
            os._exit(0)
        if os.fork() == 0:
            try:
                ctl.detach()
                del ctl
                return first_child(fds)
            except BaseException as e:
                try:
                    os.write(2, b"codexec zygote: %s\n" % str(e).encode())
                finally:
                    os._exit(126)
        for fd in fds:
            os.close(fd)


__codexec_run(*__codexec_zygote(), "__codexec_zygote")
