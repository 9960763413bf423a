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

    def landlock(rw):
        abi = libc.syscall(444, None, 0, 1)
        if abi < 6:
            raise OSError("Landlock ABI %d < 6" % abi)
        fs_all = (1 << 13) - 1 | 1 << 13 | 1 << 14 | (1 << 15 if abi >= 5 else 0)
        attr = struct.pack("QQQ", fs_all, 0, 3)  # scoped: signal, abstract unix
        ruleset = libc.syscall(444, attr, len(attr), 0)
        check(ruleset, "landlock_create_ruleset")
        read = 1 | 4 | 8  # execute, read file, read dir
        rules = {"/": read, "/dev": read | 2 | (fs_all & 1 << 15)}
        for d in rw:
            rules[d] = fs_all
        for path, access in rules.items():
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            rule = struct.pack("=Qi", access, pfd)
            check(libc.syscall(445, ruleset, 1, rule, 0), "landlock rule " + path)
            os.close(pfd)
        check(libc.prctl(38, 1, 0, 0, 0), "no_new_privs")
        check(libc.syscall(446, ruleset, 0), "landlock_restrict_self")
        os.close(ruleset)

    def drop_privileges():
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
        for cap in range(last + 1):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
        header = struct.pack("Ii", 0x20080522, 0)
        check(libc.syscall(nr_capset, header, bytes(24)), "capset")
        prog = ctypes.create_string_buffer(bpf, len(bpf))
        fprog = struct.pack("HxxxxxxQ", len(bpf) // 8, ctypes.addressof(prog))
        check(libc.prctl(22, 2, fprog, 0, 0), "seccomp")

    def populate():
        # Copy the rest of the writable private memory in one pass per
        # mapping (MADV_POPULATE_WRITE: about half a fault's cost per page).
        with open("/proc/self/maps") as maps:
            lines = maps.readlines()
        for line in lines:
            f = line.split()
            if f[1][:2] == "rw" and f[1][3] == "p" and (len(f) < 6 or f[5][:1] != "["):
                a, b = (int(x, 16) for x in f[0].split("-"))
                libc.madvise(ctypes.c_void_p(a), ctypes.c_size_t(b - a), 23)

    def program():
        # Everything but the run itself happens before "R", off the run's
        # path. The workspace is mounted later by the server below /tmp or
        # ws_root, whose rules cover it (Landlock checks a mount point's
        # parent, not the mount point).
        mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        landlock(["/tmp"] + ([ws_root] if ws_root else []))
        drop_privileges()
        os.closerange(4, 1 << 30)
        for name in set(sys.modules) - fresh:
            del sys.modules[name]
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # A forked process pays a page copy for every page it writes (~13 µs
        # each on a VM), and touching an object writes its reference count:
        # take the copies of what every run touches now.
        import site
        os.environ.clear()
        os.environb[b"HOME"] = b"/nonexistent"
        site.USER_BASE = site.USER_SITE = None
        os.path.isdir(site.getusersitepackages())
        os.environ.clear()
        exec(compile("print('', end='')", "<string>", "exec"), {})
        sys.stdout.flush()
        populate()
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
