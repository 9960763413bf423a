package codemode

import (
	"encoding/json"
	"fmt"
	"strings"
)

// pyReserved are Python keywords and the names the Python wrapper binds.
var pyReserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`False None True and as assert async await break class continue def del elif else
		except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield
		print call_tool ToolError context asyncio`) {
		pyReserved[w] = true
	}
}

// WrapPython returns the Python program for code-mode code: code is the body
// of an async function (so `return` gives the result and `await` works),
// print() output is collected as logs, context and its identifier-safe keys
// are bound, and each injected server is an object whose tools return
// awaitables (`await memory.read_graph()`); `.result()` on the same object
// is the synchronous form. Line numbers in errors are the code's own.
func WrapPython(code string, ctx map[string]any, opts WrapOptions) (string, error) {
	ctxJSON, err := contextJSON(ctx)
	if err != nil {
		return "", err
	}
	servers := Group(opts.Tools)
	var binds []string
	taken := map[string]bool{}
	for _, s := range servers {
		ident := SnakeName(s.Name)
		taken[ident] = true
		binds = append(binds, fmt.Sprintf("%q: %s", ident, pyServerSpec(s)))
	}
	keys := []string{}
	for _, k := range Bindings(ctx) {
		if !taken[k] && !pyReserved[k] && !strings.Contains(k, "$") {
			keys = append(keys, k)
		}
	}
	keysJSON, _ := json.Marshal(keys)
	r := strings.NewReplacer("@CODE@", jsonString(code), "@CTX@", jsonString(string(ctxJSON)), "@KEYS@", string(keysJSON),
		"@MARK@", jsonString(opts.Mark), "@SERVERS@", "{"+strings.Join(binds, ", ")+"}")
	return r.Replace(pythonWrapper), nil
}

// pyServerSpec is ["server name", {tool: [aliases]}] for the wrapper.
func pyServerSpec(s Server) string {
	m := map[string][]string{}
	for _, t := range s.Tools {
		m[t.Name] = []string{}
		for _, a := range []string{SnakeName(t.Name), CamelName(t.Name)} {
			if a != t.Name && !contains(m[t.Name], a) {
				m[t.Name] = append(m[t.Name], a)
			}
		}
	}
	b, _ := json.Marshal([]any{s.Name, m})
	return string(b)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

const pythonWrapper = `import ast, asyncio, concurrent.futures, json, os, sys, threading, traceback
__cx_logs = []
def __cx_print(*a, sep=None, end="\n", file=None, flush=False):
    if file is not None and file not in (sys.stdout, sys.stderr):
        return print(*a, sep=sep, end=end, file=file, flush=flush)
    __cx_logs.append((" " if sep is None else sep).join(str(x) for x in a))
class ToolError(Exception):
    pass
__cx_mark = @MARK@
__cx_wlock = threading.Lock()
__cx_pending = {}
__cx_next = [0]
def __cx_send(f):
    data = (__cx_mark + json.dumps(f) + "\n").encode()
    with __cx_wlock:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
def __cx_reader():
    for line in sys.stdin.buffer:
        f = json.loads(line)
        if f.get("re"):
            fut = __cx_pending.pop(f["id"], None)
            if fut is None:
                continue
            if f.get("ok"):
                fut.set_result(f.get("result"))
            else:
                fut.set_exception(ToolError(f.get("error")))
        elif f.get("op") == "ping":
            __cx_send({"id": f["id"], "re": True, "ok": True, "result": {"pong": True, "pending": len(__cx_pending)}})
        else:
            __cx_send({"id": f["id"], "re": True, "ok": False, "error": "unknown request %s" % f.get("op")})
    for fut in list(__cx_pending.values()):
        fut.set_exception(ToolError("codexec closed the tool channel"))
class __cx_Call:
    """A pending tool call: await it, or call .result() to block."""
    def __init__(self, fut):
        self._fut = fut
    def __await__(self):
        return asyncio.wrap_future(self._fut).__await__()
    def result(self, timeout=None):
        return self._fut.result(timeout)
def call_tool(server, tool, args=None, **kwargs):
    a = dict(args or {})
    a.update(kwargs)
    fut = concurrent.futures.Future()
    with __cx_wlock:
        __cx_next[0] += 1
        i = __cx_next[0]
        __cx_pending[i] = fut
    __cx_send({"id": i, "op": "call", "params": {"server": server, "tool": tool, "args": a}})
    return __cx_Call(fut)
class __cx_Server:
    def __init__(self, name, tools):
        for t, aliases in tools.items():
            f = (lambda t: lambda args=None, **kw: call_tool(name, t, args, **kw))(t)
            for n in [t] + aliases:
                setattr(self, n, f)
def __cx_main():
    ns = {"__name__": "__main__", "print": __cx_print, "call_tool": call_tool, "ToolError": ToolError, "asyncio": asyncio}
    ns["context"] = json.loads(@CTX@)
    for k in @KEYS@:
        ns[k] = ns["context"][k]
    servers = @SERVERS@
    if servers:
        threading.Thread(target=__cx_reader, daemon=True).start()
    for ident, (name, tools) in servers.items():
        ns[ident] = __cx_Server(name, tools)
    try:
        tree = ast.parse(@CODE@, "<code>", "exec")
    except SyntaxError as e:
        return {"ok": False, "error": {"type": "SyntaxError", "message": e.msg, "line": e.lineno or 0, "column": e.offset or 0}}
    fn = ast.AsyncFunctionDef(name="__cx_body", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                              body=tree.body or [ast.Pass()], decorator_list=[], returns=None, type_comment=None)
    if "type_params" in ast.AsyncFunctionDef._fields:
        fn.type_params = []
    mod = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    try:
        exec(compile(mod, "<code>", "exec"), ns)
    except SyntaxError as e:
        return {"ok": False, "error": {"type": "SyntaxError", "message": e.msg, "line": e.lineno or 0, "column": e.offset or 0}}
    try:
        return {"ok": True, "result": asyncio.run(ns["__cx_body"]())}
    except BaseException as e:
        tb = [fr for fr in traceback.extract_tb(e.__traceback__) if fr.filename == "<code>"]
        stack = "".join(traceback.format_list(tb)).replace(", in __cx_body\n", ", in <module>\n") + "".join(traceback.format_exception_only(type(e), e))
        err = {"type": "RuntimeError", "name": type(e).__name__, "message": str(e), "stack": stack}
        if tb:  # where in the code it failed: the innermost of its frames
            err["line"] = tb[-1].lineno or 0
            err["column"] = tb[-1].colno + 1 if getattr(tb[-1], "colno", None) is not None else 0
        return {"ok": False, "error": err}
__cx_env = __cx_main()
__cx_env["logs"] = __cx_logs
try:
    __cx_s = json.dumps(__cx_env)
except (TypeError, ValueError) as e:
    __cx_s = json.dumps({"ok": False, "logs": __cx_logs, "error": {"type": "RuntimeError", "name": "SerializationError", "message": "result is not JSON-serializable: %s" % e}})
with __cx_wlock:
    sys.stdout.flush()
    sys.stdout.buffer.write((__cx_mark + '{"id":0,"op":"done","params":' + __cx_s + "}\n").encode())
    sys.stdout.buffer.flush()
os._exit(0)
`
