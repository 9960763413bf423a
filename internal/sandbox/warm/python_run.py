def __codexec_run(src, args, status_fd, *stub_names):
    # Executes SRC once as `python -c SRC ARGS…` would, in the program's
    # globals; shared by the warm runner and fork-server stubs, which call it
    # once cwd and environment are the run's and name their own globals to
    # remove. Interpreter shutdown joins threads, runs atexit callbacks and
    # flushes stdio, then tears down modules and objects, which takes ~3 ms
    # and shows nothing (__del__ is not guaranteed at exit): a callback
    # registered first, so run last, flushes stdio and ends the process with
    # the status the interpreter would use (120 if stdout cannot be flushed).
    # With a STATUS_FD (a socket to the server), it first closes stdout and
    # stderr and reports the status there, so the server has the result
    # while the kernel still tears the process and its sandbox down.
    import os, sys, site
    sys.argv[:] = ["-c"] + args
    # The command line `python -c SRC ARGS…` would have had: this
    # interpreter's flags, then the run's code and arguments.
    sys.orig_argv = sys.orig_argv[:sys.orig_argv.index("-c") + 1] + [src] + args
    if site.ENABLE_USER_SITE:
        site.USER_BASE = site.USER_SITE = None
        user = site.getusersitepackages()
        if os.path.isdir(user):
            site.addsitedir(user)

    def fresh_stdio(sys):
        # sys.stdin, stdout and stderr as the interpreter builds them at
        # start-up (create_stdio in pylifecycle.c), on the descriptors the
        # run has now. The ones from this interpreter's start-up were built
        # on other descriptors and cache what they found there: a stdout
        # built on /dev/null says seekable() is True on the run's pipe, and
        # then reconfigure() fails with "Illegal seek". Encoding, errors and
        # buffering come from the start-up ones (same flags and environment).
        # The old objects are returned, to be kept: freeing them would write
        # to (and, in a forked run, copy) the pages they lie on.
        import io
        stale = []
        for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
            old = getattr(sys, "__%s__" % name)
            stale.append(old)
            if old is None:
                continue
            try:
                os.fstat(fd)
            except OSError:
                setattr(sys, name, None)
                setattr(sys, "__%s__" % name, None)
                continue
            buffered = not old.write_through
            buf = io.open(fd, mode + "b", -1 if buffered or mode == "r" else 0, closefd=False)
            raw = buf.raw if hasattr(buf, "raw") else buf
            raw.name = "<%s>" % name
            line = buffered and (raw.isatty() or fd == 2)
            s = io.TextIOWrapper(buf, old.encoding, old.errors, "\n", line, not buffered)
            s.mode = mode
            setattr(sys, name, s)
            setattr(sys, "__%s__" % name, s)
        return stale

    def exit_status(code):
        # What the interpreter makes of SystemExit(code); it prints a message.
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        return 1
    status = [0]

    def quick_exit(_stale=None):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                if stream is sys.stdout:
                    status[0] = 120
        if status_fd is not None:
            try:
                if os.fstat(status_fd).st_mode & 0o170000 == 0o140000:
                    os.closerange(1, 3)
                    os.write(status_fd, b"X%d\n" % status[0])
            except OSError:
                pass
        os._exit(status[0])
    stale = fresh_stdio(sys)
    import atexit
    atexit.register(quick_exit, stale)
    del sys.modules["atexit"]  # as in a fresh interpreter; callbacks stay
    g = globals()
    for name in stub_names + ("__codexec_run", "__codexec_read_run"):
        del g[name]
    g.pop("__warningregistry__", None)  # warnings the stubs' own code ignored
    try:
        # exec of the string itself, not of compile(): builtin compile()
        # builds every AST node type on its first call (~2 ms), which
        # `python -c` never does. The stub has no __future__ flags to pass on.
        exec(src, g)
    except SystemExit as e:
        status[0] = exit_status(e.code)
        raise
    except BaseException as e:
        # Report as the interpreter would for -c: the traceback starts at the
        # user's code, not at this stub.
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        if isinstance(e, KeyboardInterrupt):
            import signal
            sys.stdout.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        status[0] = 1
        raise SystemExit(1)


def __codexec_read_run(keep=None):
    # Reads one run from fd 3 (helper.EncodeRun: the payload's length
    # and a newline, then NUL-separated cwd, environment count, environment,
    # code, arguments), moves fd 3 to KEEP (closes it if None), applies cwd
    # and environment, and returns the code, the arguments and where fd 3
    # went (None if closed).
    import os
    buf = b""
    while b"\n" not in buf:
        chunk = os.read(3, 65536)
        if not chunk:
            os._exit(125)
        buf += chunk
    head, _, buf = buf.partition(b"\n")
    need = int(head)
    while len(buf) < need:
        chunk = os.read(3, max(65536, need - len(buf)))
        if not chunk:
            os._exit(125)
        buf += chunk
    if keep is not None:
        try:
            os.dup2(3, keep, inheritable=False)
        except OSError:
            keep = None
    os.close(3)
    f = buf.split(b"\0")
    cwd, nenv = f[0], int(f[1])
    env, rest = f[2:2 + nenv], f[2 + nenv:]
    os.chdir(cwd)
    os.environ.clear()
    for kv in env:
        k, _, v = kv.partition(b"=")
        os.environb[k] = v
    return os.fsdecode(rest[0]), [os.fsdecode(a) for a in rest[1:]], keep
