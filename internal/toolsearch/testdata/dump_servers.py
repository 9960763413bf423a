# Dumps tools/list of installed npm MCP servers over stdio (raw JSON-RPC).
import json, os, subprocess, sys, select, time
NM = "/tmp/i24s/npm/node_modules/@modelcontextprotocol"
servers = [
  ("everything", "server-everything", ["stdio"], {}),
  ("memory", "server-memory", [], {"MEMORY_FILE_PATH": "/tmp/i24s/mem.json"}),
  ("filesystem", "server-filesystem", ["/tmp/i24s/fsroot"], {}),
  ("sequential-thinking", "server-sequential-thinking", [], {}),
  ("github", "server-github", [], {"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"}),
  ("puppeteer", "server-puppeteer", [], {}),
  ("brave-search", "server-brave-search", [], {"BRAVE_API_KEY": "dummy"}),
  ("slack", "server-slack", [], {"SLACK_BOT_TOKEN": "dummy", "SLACK_TEAM_ID": "T0"}),
  ("gitlab", "server-gitlab", [], {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy"}),
  ("google-maps", "server-google-maps", [], {"GOOGLE_MAPS_API_KEY": "dummy"}),
  ("postgres", "server-postgres", ["postgresql://localhost:1/x"], {}),
  ("redis", "server-redis", ["redis://localhost:1"], {}),
  ("everart", "server-everart", [], {"EVERART_API_KEY": "dummy"}),
  ("gdrive", "server-gdrive", [], {}),
  ("aws-kb-retrieval", "server-aws-kb-retrieval", [], {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_REGION": "us-east-1"}),
]
os.makedirs("/tmp/i24s/fsroot", exist_ok=True)
def rpc(p, msg):
    p.stdin.write((json.dumps(msg) + "\n").encode()); p.stdin.flush()
def recv(p, want_id, deadline):
    buf = b""
    while time.time() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 0.5)
        if not r:
            if p.poll() is not None: return None
            continue
        line = p.stdout.readline()
        if not line: return None
        try: m = json.loads(line)
        except Exception: continue
        if m.get("id") == want_id: return m
    return None
out, sources = [], []
for name, pkg, args, env in servers:
    d = os.path.join(NM, pkg)
    pj = json.load(open(os.path.join(d, "package.json")))
    binp = pj["bin"]; binp = binp if isinstance(binp, str) else list(binp.values())[0]
    p = subprocess.Popen(["node", os.path.join(d, binp)] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env={**os.environ, **env}, cwd="/tmp/i24s")
    dl = time.time() + 20
    rpc(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "dump", "version": "0"}}})
    init = recv(p, 1, dl)
    if not init:
        print("FAIL init", name, file=sys.stderr); p.kill(); continue
    rpc(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools, cursor, i = [], None, 2
    while True:
        params = {"cursor": cursor} if cursor else {}
        rpc(p, {"jsonrpc": "2.0", "id": i, "method": "tools/list", "params": params})
        m = recv(p, i, dl); i += 1
        if not m or "result" not in m:
            print("FAIL list", name, m, file=sys.stderr); break
        tools += m["result"]["tools"]; cursor = m["result"].get("nextCursor")
        if not cursor: break
    p.stdin.close()
    try: p.wait(3)
    except Exception: p.kill(); p.wait()
    for t in tools:
        e = {"server": name, "name": t["name"]}
        for k in ("title", "description", "inputSchema", "annotations"):
            if k in t: e[k] = t[k]
        out.append(e)
    sources.append((name, pj["name"] + "@" + pj["version"], len(tools), init["result"]["serverInfo"]))
    print(name, pj["name"] + "@" + pj["version"], len(tools), file=sys.stderr)
json.dump(out, open(sys.argv[1], "w"), indent=1, sort_keys=True, ensure_ascii=False)
json.dump(sources, open(sys.argv[1] + ".sources", "w"), indent=1)
