# codexec session driver for python. Protocol (see protocol.go):
#   stdin:  one JSON request per line: {"id": n, "op": "exec", "code": "..."}
#           or {"op": "interrupt"} (raises KeyboardInterrupt in running code);
#           {"id": n, "op": "checkpoint", "max": bytes} and
#           {"id": n, "op": "restore", "bytes": n, "fork": bool} followed by
#           n raw bytes (see checkpoint_python.py, prepended to this file)
#   stdout: user output, plus frames MARK + JSON + "\n" answering each request
#   stderr: user output, plus MARK + {"id": n, "end": true} + "\n" after each request
import ast, importlib, json, os, signal, sys, threading, traceback, queue

MARK = sys.argv[1].encode()
sys.argv[:] = [""]  # what an interactive python has: the mark is the driver's
DRIVER = "<codexec-driver>"
requests = queue.Queue()
state = {"running": False}
ns = {"__name__": "__main__", "__builtins__": __builtins__}


def reader():
    f = os.fdopen(0, "rb")
    for line in iter(f.readline, b""):
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("op") == "interrupt":
            if state["running"]:
                os.kill(os.getpid(), signal.SIGINT)
            continue
        if msg.get("op") == "restore":
            msg["payload"] = read_payload(f, int(msg.get("bytes") or 0))
        requests.put(msg)
    requests.put(None)


def rss_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def frame(fd, obj):
    os.write(fd, MARK + json.dumps(obj).encode() + b"\n")


def user_traceback(exc):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<stdin>":
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and tb is None:
        return "".join(traceback.format_exception_only(type(exc), exc))
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_tb(tb) if tb is not None else []
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


def run(code, ns):
    importlib.invalidate_caches()  # see packages installed since the last run
    tree = ast.parse(code, "<stdin>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    before = before_cell(tree.body)
    try:
        exec(compile(tree, "<stdin>", "exec"), ns)
    finally:
        record_defs(code, tree.body, before)
    if last is not None:
        value = eval(compile(last, "<stdin>", "eval"), ns)
        if value is not None:
            ns["_"] = value
            return show(value)
    return None


def show(value):
    """repr, with pandas objects as wide tables rather than wrapped columns."""
    if (type(value).__module__ or "").startswith("pandas.") and hasattr(value, "to_string"):
        try:
            import pandas as pd
            with pd.option_context("display.width", 200, "display.max_columns", 40, "display.max_rows", 60):
                return repr(value)
        except Exception:
            pass
    return repr(value)


def flush_figures():
    """Like a notebook: figures left open by the code are shown (saved as
    PNG by codexec's matplotlib backend) when the code ends."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        if plt.get_fignums() and "codexec_mpl" in plt.get_backend():
            plt.show()
    except Exception:
        pass


def serve():
    frame(1, {"op": "ready", "pid": os.getpid(), "rss_kb": rss_kb()})
    while True:
        try:
            msg = requests.get()
        except KeyboardInterrupt:
            continue
        if msg is None:
            return
        if msg.get("op") in OPS:
            answer(msg)
            continue
        reply = {"id": msg.get("id"), "ok": True}
        try:
            state["running"] = True
            try:
                value = run(msg.get("code", ""), ns)
            finally:
                state["running"] = False
            sys.stdout.flush()
            if value is not None:
                sys.stdout.write(value + "\n")
        except KeyboardInterrupt as e:
            reply.update(ok=False, interrupted=True, error=user_traceback(e))
        except BaseException as e:  # SystemExit too: the session survives it
            reply.update(ok=False, error=user_traceback(e))
        flush_figures()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        if not reply["ok"] and reply.get("error"):
            os.write(2, reply["error"].encode(errors="replace"))
        reply["rss_kb"] = rss_kb()
        frame(2, {"id": msg.get("id"), "end": True})
        frame(1, reply)


OPS = {"checkpoint": handle_checkpoint, "restore": handle_restore, "warm": handle_warm}


def answer(msg):
    """Runs a checkpoint or restore request and sends its reply."""
    reply = {"id": msg.get("id"), "ok": True}
    try:
        state["running"] = True
        try:
            reply.update(OPS[msg["op"]](msg))
        finally:
            state["running"] = False
    except _TooBig:
        reply.update(ok=False, too_big=True, error="the session's state is over the checkpoint limit of %d bytes" % int(msg.get("max") or 0))
    except KeyboardInterrupt:
        reply.update(ok=False, interrupted=True, error="interrupted")
    except BaseException as e:
        reply.update(ok=False, error="".join(traceback.format_exception_only(type(e), e)).strip())
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    reply["rss_kb"] = rss_kb()
    frame(2, {"id": msg.get("id"), "end": True})
    frame(1, reply)
    if msg["op"] == "restore":
        drop_reserve()


threading.Thread(target=reader, daemon=True).start()
sys.stdin = open(os.devnull)
signal.signal(signal.SIGINT, signal.default_int_handler)
while True:
    try:
        serve()
        break
    except KeyboardInterrupt:
        continue
