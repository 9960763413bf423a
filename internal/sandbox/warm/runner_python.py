def __codexec_runner():
    # Warm runner stub (see warm.go), after python_run.py. Runs as the -c
    # program of a python that has finished its start-up; says ready on fd 3
    # and takes its one run from there: first the run's stdout and stderr
    # (SCM_RIGHTS, with the byte "F"), so that only the program holds them
    # and they end with it, not with the sandbox; then the run itself. fd 3
    # stays open at 1023 for the exit status (python_run.py). sys.modules is
    # left as a fresh interpreter's.
    import os, sys, _socket
    del sys.modules["_socket"]
    if len(sys.argv) > 1:
        # A container runner (container_warm.go) is given the path of its
        # control socket instead of fd 3. It runs as a background job of
        # the container's shell (warmEntry), which starts it with SIGINT and
        # SIGQUIT ignored: give it what a fresh interpreter has instead.
        import _signal
        if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        if _signal.getsignal(_signal.SIGQUIT) == _signal.SIG_IGN:
            _signal.signal(_signal.SIGQUIT, _signal.SIG_DFL)
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        fd = s.detach()
        if fd != 3:
            os.dup2(fd, 3)
            os.close(fd)
    os.write(3, b"R")
    ctl = _socket.socket(fileno=3)
    try:
        msg, anc, _, _ = ctl.recvmsg(1, _socket.CMSG_SPACE(8))
    finally:
        ctl.detach()
    fds = [int.from_bytes(data[i:i + 4], sys.byteorder)
           for level, kind, data in anc
           if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS
           for i in range(0, len(data) - 3, 4)]
    if msg != b"F" or len(fds) != 2:
        os._exit(125)
    for target, fd in zip((1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    return __codexec_read_run(1023)


__codexec_run(*__codexec_runner(), "__codexec_runner")
