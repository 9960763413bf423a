// Drives codexec over stdio with the official TypeScript SDK client (whose
// stdio reader drops the connection on a message over 10 MiB): makes 10,
// 7.5 and 6 MiB files, reads them back with download_file (default and large
// explicit lengths, following next_offset) and resources/read, and has a run
// return eight large images. Prints one JSON report on stdout for
// tsclient_test.go; the server command is argv[2..], its environment ours.
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const report = { transportErrors: [], closed: false, closedEarly: false, maxResponseBytes: 0 };
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" });
const client = new Client({ name: "codexec-tsclient-test", version: "1" });
client.onerror = (e) => report.transportErrors.push(String(e && e.message || e));
client.onclose = () => { report.closed = true; };
await client.connect(transport);

const opts = { timeout: 120000 };
const size = (r) => { const n = JSON.stringify(r).length; report.maxResponseBytes = Math.max(report.maxResponseBytes, n); return r; };
const call = async (name, a) => size(await client.callTool({ name, arguments: a }, undefined, opts));
const sha = (b) => createHash("sha256").update(b).digest("hex");

// Files: random (incompressible, base64 in blobs) bytes, hashed by the run.
const make = await call("execute_code", { language: "python", code:
  "import hashlib, os\nfor name, n in (('big.bin', 10 << 20), ('mid.bin', 6 << 20), ('near.bin', 15 << 19)):\n    d = os.urandom(n)\n    open(name, 'wb').write(d)\n    print(name, hashlib.sha256(d).hexdigest())" });
const out = make.structuredContent;
report.made = out.stdout;
const execId = out.execution_id;

async function download(path, length) {
  const parts = [];
  let offset = 0, calls = 0;
  for (;;) {
    const r = await call("download_file", { execution_id: execId, path, offset, ...(length ? { length } : {}) });
    calls++;
    if (r.isError) return { error: r.content.map((c) => c.text).join("") };
    const c = r.content[0];
    parts.push(Buffer.from(c.type === "resource" ? c.resource.blob : c.data, "base64"));
    const next = r.structuredContent.next_offset;
    if (next === undefined || next === null) break;
    offset = next;
  }
  const all = Buffer.concat(parts);
  return { bytes: all.length, sha256: sha(all), calls };
}
report.defaultRange = await download("big.bin");
report.explicit8MiB = await download("big.bin", 8 << 20);

async function read(path) {
  try {
    const r = size(await client.readResource({ uri: `codexec://executions/${execId}/files/${path}` }, opts));
    const b = Buffer.from(r.contents[0].blob, "base64");
    return { bytes: b.length, sha256: sha(b) };
  } catch (e) {
    return { error: String(e.message) };
  }
}
report.read6MiB = await read("mid.bin");
report.read7_5MiB = await read("near.bin");
report.read10MiB = await read("big.bin");

// Eight noise PNGs of ~0.95 MiB each: together over one message as base64.
const png = `import os, struct, zlib
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
w, h = 560, 590
for i in range(8):
    raw = b''.join(b'\\x00' + os.urandom(3 * w) for _ in range(h))
    data = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 0)) + chunk(b'IEND', b'')
    open('noise-%d.png' % i, 'wb').write(data)
print(len(data))`;
const imgs = await call("execute_code", { language: "python", code: png });
report.images = { status: imgs.structuredContent && imgs.structuredContent.status, stdout: imgs.structuredContent && imgs.structuredContent.stdout,
  inline: imgs.content.filter((c) => c.type === "image").length, links: imgs.content.filter((c) => c.type === "resource_link").length };

// Code-mode results: 3 MiB comes back; 6 MiB (twice in the message: text
// and structured content) is a ResultTooLarge error, not a lost connection.
for (const [key, n] of [["codeMode3MiB", 3 << 20], ["codeMode6MiB", 6 << 20]]) {
  const r = await call("execute_code", { code: `return "x".repeat(${n});` });
  const s = r.structuredContent || {};
  report[key] = { isError: !!r.isError, resultLength: typeof s.result === "string" ? s.result.length : 0, errorName: s.error && s.error.name };
}

// The connection is still there.
report.toolsAfter = (await client.listTools(undefined, opts)).tools.length;
report.closedEarly = report.closed;
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
