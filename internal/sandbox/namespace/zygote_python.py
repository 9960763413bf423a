def __codexec_zygote():
    # Python fork-server (see zygote.go). Runs, called by the -c program of
    # a python that has finished its start-up (zygoteBoot), inside a sandbox
    # without Landlock or seccomp of its own, and runs only this code. For
    # each "F" message on fd 3 (with the run's stdin, stdout, stderr, control
    # socket and cgroup files attached) it clones a child in new user, mount,
    # pid, ipc, uts and network namespaces (pid 1 of its own). The child
    # joins the run's cgroup, mounts a private /tmp, /dev/shm (and workspace
    # root) and a fresh /proc, makes the captured network's sockets if the
    # fork-server was started with some (they go with its "R", attached),
    # reports "R", waits for the run, restricts
    # itself (Landlock domain of its own, no capabilities, no_new_privs, the
    # sandbox's seccomp filter, no descriptors above stdio) and executes the
    # code as `python -c` would. The fork-server waits for each child (a
    # pidfd per child) and reports its wait status on the run's control
    # socket.
    import os, sys
    fresh = set(sys.modules)
    # _signal and _socket, not signal and socket, which import enum,
    # selectors and collections: every page of the fork-server's memory is
    # mapped, then unmapped, in each child.
    import ctypes, fcntl, gc, select, struct, _signal, _socket
    # A child's `import atexit` (python_run.py) finds it here instead of
    # running the import machinery; the stub then removes it from
    # sys.modules, which a fresh interpreter's lacks.
    import atexit

    def parse_sockets(arg):
        # helper.Sockets.String: "proxy:PORT", "dns", "tcp:PORT", in the
        # wire order of their descriptors.
        out = []
        for f in arg.split():
            kind, _, port = f.partition(":")
            if kind == "proxy":
                out.append((_socket.SOCK_STREAM, "127.0.0.1", int(port)))
            elif kind == "dns":
                out.append((_socket.SOCK_DGRAM, "127.0.0.1", 53))
                out.append((_socket.SOCK_STREAM, "127.0.0.1", 53))
            elif kind == "tcp":
                out.append((_socket.SOCK_STREAM, "0.0.0.0", int(port)))
            elif kind != "lo":
                raise OSError("bad socket %r" % f)
        return out

    argv = sys.argv[1:]
    seccomp_fd, tmp_size, ws_root = int(argv[0]), int(argv[1]), argv[2]
    nr_capset, uid, gid = int(argv[3]), int(argv[4]), int(argv[5])
    nr_clone, shm_size = int(argv[6]), int(argv[7])
    capture = parse_sockets(argv[8])
    # Resource limits where no cgroup holds the run (RlimitsOption's
    # "DATA,NPROC,FSIZE"; "" for none), set in the child's own user
    # namespace, which is what the process count is counted in.
    rlimits = [(res, int(v)) for res, v in zip((2, 6, 1), argv[9].split(",")) if int(v) > 0] if argv[9] else []
    if "threading" in sys.modules:
        # Children are cloned without python's after-fork handlers, which
        # threads would need.
        raise OSError("threading is loaded at start-up")
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
        if libc.mount(src, dst, fstype, flags, data) < 0:
            check(-1, "mount " + dst.decode(errors="replace"))

    def write_file(path, data):
        # os.open and os.write, not open(): no io objects in the child.
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
    NEWNS, NEWUTS, NEWIPC = 0x20000, 0x4000000, 0x8000000
    NEWUSER, NEWPID, NEWNET = 0x10000000, 0x20000000, 0x40000000

    CLONE_PIDFD, SIGCHLD = 0x1000, 17
    clone_flags = NEWUSER | NEWNS | NEWPID | NEWIPC | NEWUTS | NEWNET | CLONE_PIDFD | SIGCHLD
    pidfd = ctypes.c_int(-1)

    def clone():
        # fork(2) into new namespaces in one step: the child is pid 1 of
        # its pid namespace, so no intermediate process is needed. Python's
        # after-fork handlers do not run: the fork-server has no threads,
        # locks held or at-fork callbacks (start-up refuses threading).
        pid = syscall(*clone_args)
        check(pid, "clone")
        return pid

    def mounts_below_tmp():
        # The server's read-only mounts that lie below /tmp (a data
        # directory there), outermost first: a child's private /tmp would
        # hide them, so each child moves a clone of each onto its own.
        found = []
        with open("/proc/self/mountinfo", "rb") as f:
            for line in f:
                point = line.split()[4]
                if point.startswith(b"/tmp/"):
                    found.append(unescape_octal(point))
        return sorted(found, key=lambda p: p.count(b"/"))

    def unescape_octal(b):
        # mountinfo writes space, tab, newline and backslash as \ooo.
        out, i = bytearray(), 0
        while i < len(b):
            if b[i] == 0x5C and b[i + 1:i + 4].isdigit():
                out.append(int(b[i + 1:i + 4], 8))
                i += 4
            else:
                out.append(b[i])
                i += 1
        return bytes(out)

    def keep_below_tmp():
        # Detached clones of the mounts below /tmp (open_tree), to move
        # onto the private /tmp once it is mounted.
        held = []
        for point in below_tmp:
            fd = libc.syscall(428, -100, point, 1 | os.O_CLOEXEC)  # OPEN_TREE_CLONE
            check(fd, "open_tree " + point.decode(errors="replace"))
            held.append((point, fd))
        return held

    def restore_below_tmp(held):
        for point, fd in held:
            os.makedirs(point, exist_ok=True)
            check(libc.syscall(429, fd, b"", -100, point, 4), "move_mount")  # F_EMPTY_PATH
            os.close(fd)

    # struct ifreq for SIOCSIFFLAGS: "lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING.
    lo_up = struct.pack("16sH22x", b"lo", 0x1 | 0x8 | 0x40)

    def loopback_up():
        # The new network namespace has only lo, and it is down: bring it
        # up so a run can talk to itself over 127.0.0.1, as in every other
        # mode (bwrap does the same for its runs). _socket, not socket: the
        # latter's python-level methods would copy the pages they lie on.
        s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        try:
            fcntl.ioctl(s.fileno(), 0x8914, lo_up)  # SIOCSIFFLAGS
        finally:
            s.close()

    uid_map, gid_map = b"%d %d 1" % (uid, uid), b"%d %d 1" % (gid, gid)
    tmp_opts = b"size=%d,mode=1777" % tmp_size
    shm_opts = b"size=%d,mode=1777" % shm_size
    ws_root_b = os.fsencode(ws_root)

    def make_sockets():
        # The captured network's listening sockets, made while the child
        # still has its capabilities in the user namespace that owns its
        # network namespace (ports below 1024); the program cannot bind
        # them, nor change the namespace, once they are dropped.
        fds = []
        for kind, host, port in capture:
            s = _socket.socket(_socket.AF_INET, kind)
            s.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            if kind == _socket.SOCK_STREAM:
                s.listen(128)
            fds.append(s.detach())
        return fds

    def ready_with(fds):
        # "R" with the sockets attached (SCM_RIGHTS), on the run's control
        # socket; closerange() then closes this process's copies.
        s = _socket.socket(fileno=3)
        try:
            s.sendmsg([b"R"], [(SOL_SOCKET, SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))])
        finally:
            s.detach()

    def namespaces():
        write_file("/proc/self/uid_map", uid_map)
        write_file("/proc/self/setgroups", b"deny")
        write_file("/proc/self/gid_map", gid_map)
        mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
        held = keep_below_tmp() if below_tmp else ()
        mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, tmp_opts)
        restore_below_tmp(held)
        mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, shm_opts)
        loopback_up()
        if ws_root:
            mount(b"tmpfs", ws_root_b, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
        return make_sockets() if capture else None

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
            shared.append(("landlock rule " + path, struct.pack("=Qi", access, pfd)))
        return fs_all, attr, shared

    def landlock():
        ruleset = libc.syscall(444, ll_attr, len(ll_attr), 0)
        check(ruleset, "landlock_create_ruleset")
        for what, rule in ll_shared:
            check(libc.syscall(445, ruleset, 1, rule, 0), what)
        for path, what in ll_rw:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            rule = ll_rw_access + pfd.to_bytes(4, sys.byteorder)
            check(libc.syscall(445, ruleset, 1, rule, 0), what)
        check(libc.prctl(38, 1, 0, 0, 0), "no_new_privs")
        check(libc.syscall(446, ruleset, 0), "landlock_restrict_self")
        # The rule descriptors go with closerange() after this.

    # What every child needs for its restriction is built once here, so a
    # child copies no page for it (each page a fork's child writes is a copy).
    ll_fs_all, ll_attr, ll_shared = landlock_base()
    ll_rw_access = struct.pack("=Q", ll_fs_all)  # then the directory's descriptor
    ll_rw = [(d, "landlock rule " + d) for d in ["/tmp", "/dev/shm"] + ([ws_root] if ws_root else [])]
    below_tmp = mounts_below_tmp()
    with open("/proc/sys/kernel/cap_last_cap") as f:
        all_caps = range(int(f.read()) + 1)
    cap_header, cap_data = struct.pack("Ii", 0x20080522, 0), bytes(24)
    seccomp_prog = ctypes.create_string_buffer(bpf, len(bpf))
    seccomp_fprog = struct.pack("HxxxxxxQ", len(bpf) // 8, ctypes.addressof(seccomp_prog))

    def set_rlimits():
        for res, n in rlimits:
            lim = struct.pack("QQ", n, n)
            check(libc.setrlimit(res, lim), "setrlimit")

    def drop_privileges():
        for cap in all_caps:
            prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
        check(syscall(nr_capset, cap_header, cap_data), "capset")
        check(prctl(22, 2, seccomp_fprog, 0, 0), "seccomp")

    def program(sockets):
        # Everything but the run itself happens before "R", off the run's
        # path. The workspace is mounted later by the server below /tmp or
        # ws_root, whose rules cover it (Landlock checks a mount point's
        # parent, not the mount point).
        mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        landlock()
        drop_privileges()
        set_rlimits()
        if sockets:
            ready_with(sockets)
        closerange(4, 1 << 30)
        for name in zygote_modules:
            del sys.modules[name]
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        if not sockets:
            write(3, b"R")
        gc.unfreeze()
        return __codexec_read_run()

    def child(fds):
        # fds: stdin, stdout, stderr, control socket, cgroup.procs files.
        ctl.detach()  # fd 3 becomes the run's control socket
        for p in fds[4:]:
            write(p, b"0")
            close(p)
        for i, fd in enumerate(fds[:4]):
            dup2(fd, i)
        for fd in fds[:4]:
            if fd > 3:
                close(fd)
        return program(namespaces())

    def start(fds):
        # Clones a child for one run. Returns, in the fork-server, the
        # child's pidfd and (pid, the run's control socket); in the child,
        # None and its run.
        try:
            pid = clone()
        except OSError:
            for fd in fds:
                close(fd)
            raise
        if pid == 0:
            try:
                return None, child(fds)
            except BaseException as e:
                try:
                    os.write(2, b"codexec zygote: %s\n" % str(e).encode())
                finally:
                    os._exit(126)
        for fd in fds[:3] + fds[4:]:
            close(fd)
        return pidfd.value, (pid, fds[3])

    def recv_fds():
        # One "F" message and the descriptors attached to it.
        msg, anc, _, _ = recvmsg(16, cmsg_space)
        fds = []
        for level, kind, data in anc:
            if level == SOL_SOCKET and kind == SCM_RIGHTS:
                fds += memoryview(data[:len(data) & ~3]).cast("i").tolist()
        return msg, fds

    def reap(pid, run_ctl):
        _, status = waitpid(pid, 0)
        try:
            write(run_ctl, pack_status(status))
        except OSError:
            pass  # the server gave up on the run
        close(run_ctl)

    ctl = _socket.socket(fileno=3)
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
    zygote_modules = sorted(set(sys.modules) - fresh - {"atexit"})
    # What the serving loop and a child's steps use, bound once and made
    # last, so that it lies on few pages: after each fork, every page the fork-server writes is
    # copied while the child lives, and each attribute lookup writes to the
    # objects it goes through.
    syscall, prctl, close, waitpid, write = libc.syscall, libc.prctl, os.close, os.waitpid, os.write
    dup2, closerange = os.dup2, os.closerange
    clone_args = (nr_clone, ctypes.c_ulong(clone_flags), None, ctypes.byref(pidfd), None, None)
    recvmsg, cmsg_space = ctl.recvmsg, _socket.CMSG_SPACE(16 * 4)
    SOL_SOCKET, SCM_RIGHTS, POLLIN = _socket.SOL_SOCKET, _socket.SCM_RIGHTS, select.POLLIN
    pack_status = struct.Struct("i").pack
    poll = select.poll()
    wait, register, unregister = poll.poll, poll.register, poll.unregister
    register(3, POLLIN)
    live = {}  # pidfd: (pid, the run's control socket)
    live_pop = live.pop
    # In a child, this function's objects outlive it (until a full
    # collection, for the cycle): freeing them as its frame goes would write
    # to, and so copy, every page they and what they hold lie on.
    # The stub's functions too: it removes them from the run's globals.
    keep = list(locals().values())
    keep += [keep, __codexec_zygote, __codexec_run, __codexec_read_run]
    # Keep the collector off the zygote's objects in children (each page it
    # touched would be copied); children unfreeze before the run.
    gc.freeze()
    os.write(3, b"Z")
    while True:
        for fd, _ in wait():
            if fd != 3:
                unregister(fd)
                reap(*live_pop(fd))
                close(fd)
                continue
            msg, fds = recv_fds()
            if not msg:
                os._exit(0)
            try:
                child_fd, started = start(fds)
            except OSError as e:
                os.write(2, b"codexec zygote: %s\n" % str(e).encode())
                continue
            if child_fd is None:
                return started  # in the child: its run
            live[child_fd] = started
            register(child_fd, POLLIN)

