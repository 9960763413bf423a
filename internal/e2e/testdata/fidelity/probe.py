# Fidelity probe: prints one JSON object describing the interpreter it runs
# in, as a fresh `python3 -c` would see itself. Top-level names are taken
# first, before the probe adds its own.
G0 = sorted(k for k in globals() if k != "G0")
import sys
M0 = sorted(sys.modules)
import atexit, gc, json, os, random, resource, secrets, signal, tempfile, threading, uuid, warnings


def stream(s, write):
    if s is None:
        return None
    d = {k: getattr(s, k, None) for k in ("encoding", "errors", "line_buffering", "write_through", "name", "mode", "closed", "newlines")}
    d["type"] = type(s).__name__
    d["buffer"] = type(s.buffer).__name__
    d["raw"] = type(getattr(s.buffer, "raw", s.buffer)).__name__
    d["raw_name"] = getattr(s.buffer, "raw", s.buffer).name
    d["fileno"] = s.fileno()
    d["seekable"] = s.seekable()
    d["isatty"] = s.isatty()
    d["readable"], d["writable"] = s.readable(), s.writable()
    try:
        s.reconfigure(encoding="utf-8")
        d["reconfigure"] = "ok"
    except Exception as e:
        d["reconfigure"] = repr(e)
    return d


def status_lines():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("SigBlk", "SigIgn", "SigCgt", "Threads", "NoNewPrivs", "Seccomp", "CapEff", "CapBnd"):
                out[k] = v.strip()
    return out


def fds():
    out = {}
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            t = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        out[fd] = t.split(":")[0] if ":[" in t else t
    return out


def handlers():
    out = {}
    for n in range(1, signal.NSIG):
        try:
            h = signal.getsignal(n)
        except (ValueError, OSError):
            continue
        out[str(n)] = {signal.SIG_DFL: "default", signal.SIG_IGN: "ignore", None: "none"}.get(h, getattr(h, "__name__", repr(h)))
    return out


mask = os.umask(0)
os.umask(mask)
main = sys.modules["__main__"]
import select
# A stdin that does not end shows as such instead of blocking the probe.
if sys.stdin is None:
    stdin_text = None
elif "fidelity" in globals() or "fidelity" in dir():
    stdin_text = "not read: a code mode run or a session"
elif select.select([sys.stdin], [], [], 2)[0]:
    stdin_text = sys.stdin.read()
else:
    stdin_text = "does not end"
probe = {
    "globals": G0,
    "modules_at_start": M0,
    "name": __name__,
    "main_is_module": sys.modules.get("__main__") is not None and vars(main) is globals(),
    "main_spec": repr(getattr(main, "__spec__", "missing")),
    "main_file": getattr(main, "__file__", None),
    "main_loader": type(getattr(main, "__loader__", None)).__name__,
    "builtins": type(__builtins__).__name__,
    "argv": sys.argv,
    "orig_argv": [a if len(a) < 100 else "<%d characters>" % len(a) for a in sys.orig_argv],
    "path": sys.path,
    "flags": {k: getattr(sys.flags, k) for k in dir(sys.flags) if not k.startswith("_") and not callable(getattr(sys.flags, k))},
    "warnoptions": sys.warnoptions,
    "xoptions": sys._xoptions,
    "executable": sys.executable,
    "prefix": [sys.prefix, sys.exec_prefix, sys.base_prefix],
    "recursionlimit": sys.getrecursionlimit(),
    "switchinterval": sys.getswitchinterval(),
    "fsencoding": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()],
    "stdin": stream(sys.stdin, False),
    "stdout": stream(sys.stdout, True),
    "stderr": stream(sys.stderr, True),
    "dunder_stdio_same": [sys.stdin is sys.__stdin__, sys.stdout is sys.__stdout__, sys.stderr is sys.__stderr__],
    "stdin_text": stdin_text,
    "env": dict(os.environ),
    "cwd": os.getcwd(),
    "umask": oct(mask),
    "rlimits": {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n.startswith("RLIMIT_")},
    "status": status_lines(),
    "handlers": handlers(),
    "fds": fds(),
    "threads": threading.active_count(),
    "atexit_callbacks": atexit._ncallbacks(),
    "warnings": [repr(f) for f in warnings.filters],
    "gc": [gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()],
    "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
    "pgrp_is_pid": os.getpgrp() == os.getpid(),
    "sid_is_pid": os.getsid(0) == os.getpid(),
    "nice": os.nice(0),
    "exc_info": repr(sys.exc_info()),
    "per_run": {
        "hash": hash("abc"),
        "random": random.random(),
        "uuid4": str(uuid.uuid4()),
        "tempname": next(tempfile._get_candidate_names()),
        "secrets": secrets.token_hex(8),
        "pid": os.getpid(),
        "urandom": os.urandom(8).hex(),
    },
}
print(json.dumps(probe, sort_keys=True, default=repr))
