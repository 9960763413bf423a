def __codexec_runner():
    # Warm runner stub (see warm.go). Runs as the -c program of a python that
    # has finished its start-up; waits on fd 3 for one run, applies it, then
    # executes the code exactly once as `python -c CODE ARGS…` would. Only
    # modules python imports at start-up are used, so sys.modules is left as
    # a fresh interpreter's.
    import os, sys, site
    os.write(3, b"R")
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
    os.close(3)
    f = buf.split(b"\0")
    cwd, nenv = f[0], int(f[1])
    env, rest = f[2:2 + nenv], f[2 + nenv:]
    os.chdir(cwd)
    os.environ.clear()
    for kv in env:
        k, _, v = kv.partition(b"=")
        os.environb[k] = v
    src = os.fsdecode(rest[0])
    sys.argv[:] = ["-c"] + [os.fsdecode(a) for a in rest[1:]]
    if site.ENABLE_USER_SITE:
        site.USER_BASE = site.USER_SITE = None
        user = site.getusersitepackages()
        if os.path.isdir(user):
            site.addsitedir(user)
    # Interpreter shutdown joins threads, runs atexit callbacks and flushes
    # stdio, then tears down modules and objects, which takes ~3 ms and shows
    # nothing (__del__ is not guaranteed at exit). This callback, registered
    # first, runs last: it flushes stdio and ends the process with the status
    # the interpreter would use (120 if stdout cannot be flushed).
    def exit_status(code):
        # What the interpreter makes of SystemExit(code); it prints the
        # message itself.
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        return 1
    status = [0]
    def quick_exit():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                if stream is sys.stdout:
                    status[0] = 120
        os._exit(status[0])
    import atexit
    atexit.register(quick_exit)
    del sys.modules["atexit"]  # as in a fresh interpreter; callbacks stay
    g = globals()
    del g["__codexec_runner"]
    try:
        code = compile(src, "<string>", "exec", dont_inherit=True)
        del src, f, env, rest, buf
        exec(code, g)
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
__codexec_runner()
