def __codexec_runner():
    # Warm runner stub (see warm.go), after python_run.py. Runs as the -c
    # program of a python that has finished its start-up; says ready on fd 3
    # and takes its one run from there. Only modules python imports at
    # start-up are used, so sys.modules is left as a fresh interpreter's.
    import os
    os.write(3, b"R")
    return __codexec_read_run()


__codexec_run(*__codexec_runner(), "__codexec_runner")
