# codexec session checkpoints for python (prepended to driver_python.py).
# Runs inside the sandbox only: the server never unpickles what this makes.
#
# A checkpoint is a JSON header line and the pickled values:
#   header: {"imports": [[name, module, qualname|null]],
#            "defs": [[key, name, source]],   in definition order
#            "values": [[name, offset, length]], "lost": {name: why},
#            "random": random.getstate() | null}
#   values: one pickle per name, written by one Pickler (so objects shared
#           between names stay shared) and read back one name at a time;
#           or, when every object is of an exact builtin type marshal
#           carries unchanged (format "marshal"), one marshal of all the
#           names, which loads faster.
# Functions and classes the session defined are not pickled but re-created
# from the source of the cell that defined them; values referring to them
# (instances, lists of functions) refer to them by key.
# pickle and base64 are imported on first use: a session that is never
# checkpointed does not pay for them at start-up.
import ast, gc, importlib, io, json, os, sys, types, weakref

_defs = {}      # key -> (ref to the object, name, source)
_def_ids = {}   # id(object) -> key
_cells = [0]
_made = {}      # key -> object re-created by a restore


def _source_of(lines, node):
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(lines[start - 1:node.end_lineno])


def _unwrap(obj):
    for _ in range(16):
        nxt = getattr(obj, "__wrapped__", None)
        if nxt is None:
            return obj
        obj = nxt
    return obj


def _made_by(node, obj):
    """Whether obj is what the top-level statement node just made."""
    if isinstance(node, ast.ClassDef):
        return isinstance(obj, type) and obj.__name__ == node.name
    code = getattr(_unwrap(obj), "__code__", None)
    if code is None or code.co_filename != "<stdin>":
        return False
    if isinstance(node, ast.Assign):
        return code.co_name == "<lambda>"
    return code.co_name == node.name


def _def_nodes(body):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda)
              and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            yield node.targets[0].id, node


def before_cell(body):
    """The objects the cell's definitions will replace (see record_defs)."""
    return {name: ns.get(name) for name, _ in _def_nodes(body)}


def record_defs(code, body, before):
    """Remembers the source of each function, class and lambda the cell
    just defined at top level."""
    _cells[0] += 1
    lines = code.splitlines(keepends=True)
    for name, node in _def_nodes(body):
        obj = ns.get(name)
        if obj is None or obj is before.get(name) or not _made_by(node, obj):
            continue
        key = "%d:%d:%s" % (_cells[0], node.lineno, name)
        _remember(key, obj, name, _source_of(lines, node))


def _remember(key, obj, name, src):
    """Records a definition. The record holds its object weakly where it
    can, so a function redefined in a loop does not pile up: a dead
    record is dropped (its id may then name another object)."""
    try:
        ref = weakref.ref(obj, lambda _r, k=key, i=id(obj): _forget(k, i))
    except TypeError:
        ref = lambda o=obj: o
    _defs[key] = (ref, name, src)
    _def_ids[id(obj)] = key


def _forget(key, oid):
    _defs.pop(key, None)
    if _def_ids.get(oid) == key:
        del _def_ids[oid]


def _def_key(obj):
    key = _def_ids.get(id(obj))
    rec = _defs.get(key) if key is not None else None
    if rec is not None and rec[0]() is obj:
        return key
    return None


def _ckpt_def(key):
    """Resolves a reference to a re-created definition (see _Pickler)."""
    if key not in _made:
        raise LookupError("its function or class could not be re-created")
    return _made[key]


def _importable(v):
    """(module, qualname) when v is a function or class reachable by name
    in a module other than the session's."""
    if not isinstance(v, (types.FunctionType, types.BuiltinFunctionType, type)):
        return None
    mod, qual = getattr(v, "__module__", None), getattr(v, "__qualname__", None)
    if not mod or mod == "__main__" or not qual or "<" in qual:
        return None
    obj = sys.modules.get(mod)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return (mod, qual) if obj is v else None


class _TooBig(Exception):
    pass


class _Capped(io.BytesIO):
    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def write(self, b):
        if self.tell() + len(b) > self.cap:
            raise _TooBig()
        return super().write(b)


_classes = {}


def _picklers():
    """The Pickler and Unpickler classes, made on first use."""
    if _classes:
        return _classes["p"], _classes["u"]
    import pickle

    class Pickler(pickle.Pickler):
        # Protocol 4: unlike 5, it has no opcode for bytearray, so a
        # bytearray, like every object not of an exact int, float, str,
        # bytes, dict, list, tuple, set or frozenset type (or None, a bool),
        # passes reducer_override: calls == 0 means marshal carries it all.
        def __init__(self, f, used):
            super().__init__(f, protocol=4)
            self.used = used
            self.calls = 0

        def reducer_override(self, obj):
            self.calls += 1
            if isinstance(obj, types.ModuleType):
                return (importlib.import_module, (obj.__name__,))
            key = _def_key(obj)
            if key is not None:
                self.used.add(key)
                return (_ckpt_def, (key,))
            return NotImplemented

    class Unpickler(pickle.Unpickler):
        def __init__(self, f, generators):
            super().__init__(f)
            self.generators = generators

        def find_class(self, module, name):
            if module == "__main__" and name == "_ckpt_def":
                return _ckpt_def
            cls = super().find_class(module, name)
            if self.generators is not None and isinstance(cls, type) and _is_random(cls):
                made = self.generators

                def build(*args, **kw):
                    g = cls(*args, **kw)
                    made.append(g)
                    return g
                return build
            return cls

    _classes["p"], _classes["u"] = Pickler, Unpickler
    return Pickler, Unpickler


_KINDS = (("TextIOWrapper", "open file"), ("BufferedReader", "open file"), ("BufferedWriter", "open file"),
          ("BufferedRandom", "open file"), ("FileIO", "open file"), ("socket", "socket"), ("generator", "generator"),
          ("coroutine", "coroutine"), ("_thread.lock", "lock"), ("RLock", "lock"), ("Thread", "thread"),
          ("<lambda>", "lambda without source"), ("frame", "frame"), ("SSLContext", "SSL context"))


def _why(e):
    msg = str(e) or type(e).__name__
    for needle, kind in _KINDS:
        if needle in msg:
            return kind
    if isinstance(e, RecursionError):
        return "too deeply nested"
    return msg[:100]


def _dump_values(values, cap, failed):
    """Pickles values one name at a time with one Pickler; returns the
    bytes, the [name, offset, length] of each and the definitions they
    refer to. Names that cannot be pickled are added to failed."""
    Pickler, _ = _picklers()
    while True:
        out, used = _Capped(cap), set()
        p, index, bad = Pickler(out, used), [], None
        for name, v in values.items():
            start = out.tell()
            try:
                p.dump(v)
            except _TooBig:
                raise
            except Exception as e:
                bad = name
                failed[name] = _why(e)
                break
            index.append([name, start, out.tell() - start])
        if bad is None:
            return out.getvalue(), index, used, p.calls == 0
        # A failed dump leaves the Pickler's memo naming bytes that are
        # dropped: start again without the name that failed.
        values = {k: v for k, v in values.items() if k != bad}


def take_checkpoint(cap):
    """Returns (payload, report) for the session namespace, or raises
    _TooBig when the state passes cap bytes."""
    imports, direct, values, lost = [], {}, {}, {}
    for name, v in list(ns.items()):
        # Dunder names are the namespace's own; _ is the last result shown.
        if (name.startswith("__") and name.endswith("__")) or name == "_":
            continue
        if isinstance(v, types.ModuleType):
            imports.append([name, v.__name__, None])
            continue
        key = _def_key(v)
        if key is not None and _defs[key][1] == name:
            direct[name] = key
            continue
        ref = _importable(v)
        if ref is not None:
            imports.append([name, ref[0], ref[1]])
            continue
        values[name] = v
    enabled = gc.isenabled()
    gc.disable()
    try:
        data, index, used, plain = _dump_values(values, cap, lost)
        fmt, data = _as_marshal(plain, index, values, data, cap)
    finally:
        if enabled:
            gc.enable()
    keys = set(direct.values()) | used
    defs = [[k, _defs[k][1], _defs[k][2]] for k in sorted(keys, key=_def_order)]
    rnd = sys.modules.get("random")
    header = {"imports": imports, "defs": defs, "values": index, "lost": lost, "format": fmt,
              "random": rnd.getstate() if rnd is not None else None}
    hb = json.dumps(header).encode()
    if len(hb) + len(data) + 1 > cap:
        raise _TooBig()
    report = {"values": [i[0] for i in index], "defs": sorted(direct), "modules": sorted(i[0] for i in imports),
              "lost": lost}
    return hb + b"\n" + data, report


def _as_marshal(plain, index, values, data, cap):
    """("marshal", bytes) when the values are plain enough for marshal
    (the pickle pass says so, and it already bounded their size), else
    ("pickle", data)."""
    if not plain or not index:
        return "pickle", data
    import marshal
    try:
        m = marshal.dumps({i[0]: values[i[0]] for i in index}, 4)
    except (ValueError, MemoryError):  # too deeply nested
        return "pickle", data
    if len(m) > cap:
        return "pickle", data
    return "marshal", m


def _def_order(key):
    cell, line, _ = key.split(":", 2)
    return (int(cell), int(line))


def _is_random(cls):
    rnd = sys.modules.get("random")
    return rnd is not None and issubclass(cls, rnd.Random)


def restore_checkpoint(payload, fork):
    """Restores a checkpoint into ns; returns the report of what came back."""
    nl = payload.index(b"\n")
    header = json.loads(payload[:nl])
    report = {"values": [], "defs": [], "modules": [], "lost": {}, "notes": []}
    lost = report["lost"]
    for name, mod, qual in header["imports"]:
        try:
            obj = importlib.import_module(mod)
            for part in (qual.split(".") if qual else []):
                obj = getattr(obj, part)
            ns[name] = obj
            report["modules"].append(name)
        except BaseException as e:
            lost[name] = "import failed: " + _why(e)
    deferred = _restore_defs(header["defs"], report)
    generators = [] if fork else None
    if header.get("format") == "marshal":
        _restore_marshal(header["values"], payload, nl + 1, report)
    else:
        _restore_values(header["values"], payload, nl + 1, generators, report)
    if deferred:
        _restore_defs(deferred, report)
    _restore_random(header.get("random"), fork, generators, report)
    _made.clear()  # only the unpickling above looks definitions up by key
    report["values"].sort()
    report["defs"].sort()
    report["modules"].sort()
    return report


def _restore_defs(defs, report):
    """Re-creates definitions from source; returns those that failed (tried
    again once the values are back: a default may name one)."""
    failed = []
    for key, name, src in defs:
        before = ns.get(name)
        try:
            exec(compile(src, "<stdin>", "exec"), ns)
        except BaseException as e:
            report["lost"][name] = "re-creating it failed: " + _why(e)
            failed.append([key, name, src])
            continue
        obj = ns.get(name)
        _made[key] = obj
        _remember(key, obj, name, src)
        report["lost"].pop(name, None)
        if obj is not before and name not in report["defs"]:
            report["defs"].append(name)
    return failed


def _restore_values(index, payload, start, generators, report):
    _, Unpickler = _picklers()
    f = io.BytesIO(payload)  # shares a bytes payload's buffer: no copy
    u = Unpickler(f, generators)
    enabled = gc.isenabled()
    gc.disable()
    try:
        for name, off, length in index:
            f.seek(start + off)
            try:
                ns[name] = u.load()
                report["values"].append(name)
            except BaseException as e:
                report["lost"][name] = "unpickling failed: " + _why(e)
    finally:
        if enabled:
            gc.enable()


def _restore_marshal(index, payload, start, report):
    import marshal
    enabled = gc.isenabled()
    gc.disable()
    try:
        values = marshal.loads(memoryview(payload)[start:])
    except BaseException as e:
        for name, _, _ in index:
            report["lost"][name] = "unmarshalling failed: " + _why(e)
        return
    finally:
        if enabled:
            gc.enable()
    ns.update(values)
    report["values"].extend(values)


def _restore_random(state, fork, generators, report):
    if fork:
        rnd = sys.modules.get("random")
        if rnd is not None:
            rnd.seed()
        for g in generators or []:
            g.seed()
        report["notes"].append("random reseeded (module and %d Random instances)" % len(generators or []))
    elif state is not None:
        import random
        random.setstate((state[0], tuple(state[1]), state[2]))


def handle_checkpoint(msg):
    """Answers a checkpoint request: chunk frames with the payload, then the
    reply (sent by serve)."""
    import base64
    payload, report = take_checkpoint(int(msg.get("max") or (64 << 20)))
    # Chunk frames have one fixed shape, which the server reads without a
    # JSON decoder: {"op":"chunk","id":N,"data":"BASE64"}.
    step, head = 1 << 20, b'{"op":"chunk","id":%d,"data":"' % int(msg.get("id"))
    for i in range(0, len(payload), step):
        _write_all(1, MARK + head + base64.b64encode(payload[i:i + step]) + b'"}\n')
    return {"bytes": len(payload), "report": report}


def _write_all(fd, b):
    view = memoryview(b)
    while view:
        view = view[os.write(fd, view):]


def handle_warm(msg):
    """Readies a spare interpreter for a restore (imports, classes) and
    faults in about msg["reserve"] bytes of object memory for it."""
    import marshal
    _picklers()
    _fill_reserve(int(msg.get("reserve") or 0))
    _fill_inbox(int(msg.get("inbox") or 0))
    return {}


# _inbox is a buffer, its pages faulted in, that the next restore's
# payload is read into (read_payload) instead of a new bytes object whose
# every page would fault during the read.
_inbox = [bytearray()]


def _fill_inbox(n):
    if n <= len(_inbox[0]):
        return
    buf = bytearray(n)
    buf[::4096] = b"\1" * len(range(0, n, 4096))  # one write per page
    _inbox[0] = buf


def read_payload(f, n):
    """Reads a restore's n bytes of payload from f: into the inbox when it
    is large enough, else into a new bytes object."""
    buf = _inbox[0]
    if n == 0 or n > len(buf):
        return f.read(n)
    _inbox[0] = bytearray()
    got = 0
    with memoryview(buf) as mv:
        while got < n:
            with mv[got:n] as part:
                k = f.readinto(part)
            if not k:
                break
            got += k
    del buf[got:]
    return buf


# _reserve pins object memory a restore will need. Loading 10 MB of plain
# data makes ~45 MB of small objects, and a new process faults in every
# page of it (a third of the load's time). So a spare allocates small
# objects ahead of time, keeps one per 256 KiB of address space (at least
# one in each of pymalloc's 1 MiB arenas, which are only returned to the
# system when empty) and frees the rest: the arenas stay mapped and
# faulted in, and the restore's objects fill them. restore_checkpoint
# drops the pins, so what the restore did not use is released.
_reserve = []
_reserved = [0]


def _fill_reserve(want):
    need = (want - _reserved[0]) // 512
    if need <= 0:
        return
    # 470 bytes of data make a 512-byte block, pymalloc's largest size class.
    blocks = [bytes(470) for _ in range(need)]
    pins = {}
    for b in blocks:
        pins.setdefault(id(b) >> 18, b)
    del blocks
    _reserve.extend(pins.values())
    _reserved[0] += need * 512


def drop_reserve():
    """Gives back the arenas a restore did not fill (the driver calls it
    once the restore's reply is sent: unmapping them is nobody's wait)."""
    _reserve.clear()
    _reserved[0] = 0


def handle_restore(msg):
    return {"report": restore_checkpoint(msg.get("payload") or b"", bool(msg.get("fork")))}
