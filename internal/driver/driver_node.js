// codexec session driver for node. Same protocol as driver_python.py
// (checkpoint and restore requests included):
// JSON request lines on stdin (read by a worker thread so an interrupt can
// arrive while user code blocks the main thread), user output on stdout and
// stderr, and MARK-prefixed frames answering each request on both streams.
const fs = require("fs");
const repl = require("repl");
const vm = require("vm");
const util = require("util");
const { PassThrough } = require("stream");
const { Worker } = require("worker_threads");

const MARK = process.argv[process.argv.length - 1];
process.argv.splice(1); // what the node REPL has: the mark is the driver's
const state = { running: false, pending: null };

function rssKB() {
  return Math.round(process.memoryUsage.rss() / 1024);
}

// userStack keeps an error's message and the frames of the user's code,
// dropping the driver's and node's own frames below them.
function userStack(err) {
  if (!err || !err.stack) return String(err);
  const out = [];
  for (const line of String(err.stack).split("\n")) {
    if (/^\s+at /.test(line) && !line.includes("<stdin>")) break;
    out.push(line);
  }
  return out.join("\n");
}

function frame(fd, obj) {
  fs.writeSync(fd, MARK + JSON.stringify(obj) + "\n");
}

const server = repl.start({
  input: new PassThrough(), output: new PassThrough(), terminal: false,
  prompt: "", breakEvalOnSigint: true, useGlobal: true, ignoreUndefined: true,
});
server.context.require = require;
// The REPL reports evaluation errors to its domain instead of the eval
// callback; route them to the pending request (or stderr when none).
server._domain.removeAllListeners("error");
server._domain.on("error", (e) => {
  if (state.pending) state.pending(e);
  else fs.writeSync(2, ((e && e.stack) || String(e)) + "\n");
});

const reader = new Worker(`
  const fs = require("fs");
  const { parentPort } = require("worker_threads");
  const buf = Buffer.alloc(65536);
  let rest = Buffer.alloc(0);
  let want = null; // a restore request waiting for its payload bytes
  for (;;) {
    let n;
    try { n = fs.readSync(0, buf, 0, buf.length, null); } catch (e) { if (e.code === "EAGAIN") continue; break; }
    if (n === 0) break;
    rest = Buffer.concat([rest, buf.subarray(0, n)]);
    for (;;) {
      if (want) {
        if (rest.length < want.bytes) break;
        want.payload = new Uint8Array(rest.subarray(0, want.bytes));
        rest = rest.subarray(want.bytes);
        parentPort.postMessage(want);
        want = null;
        continue;
      }
      const i = rest.indexOf(10);
      if (i < 0) break;
      const line = rest.subarray(0, i).toString("utf8"); rest = rest.subarray(i + 1);
      let msg; try { msg = JSON.parse(line); } catch (e) { continue; }
      if (msg.op === "interrupt") { parentPort.postMessage({ interrupt: true }); process.kill(process.pid, "SIGINT"); }
      else if (msg.op === "restore") want = msg;
      else parentPort.postMessage(msg);
    }
  }
  parentPort.postMessage({ eof: true });
`, { eval: true });

const queue = [];
reader.on("message", (msg) => {
  if (msg.eof) { state.eof = true; pump(); return; }
  if (msg.interrupt) return;
  queue.push(msg);
  pump();
});

function onSigint() {
  if (state.pending) state.pending(new Error("Script execution was interrupted by SIGINT"), undefined, true);
}

// armSigint (re)installs the SIGINT listener. The REPL's break-on-SIGINT
// watchdog restores the default disposition when a synchronous evaluation
// ends, which would make the next SIGINT fatal; re-adding the listener
// re-arms node's handler.
function armSigint() {
  process.removeAllListeners("SIGINT");
  process.on("SIGINT", onSigint);
}
armSigint();

function pump() {
  if (state.running) return;
  if (queue.length === 0) {
    if (state.eof) process.exit(0);
    return;
  }
  const msg = queue.shift();
  if (msg.op === "checkpoint" || msg.op === "restore" || msg.op === "warm") {
    answer(msg);
    setImmediate(pump);
    return;
  }
  __codexecCheckpoint.noteCell(msg.code);
  state.running = true;
  let done = false;
  const finish = (err, value, interrupted) => {
    if (done) return;
    done = true;
    state.pending = null;
    const reply = { id: msg.id, ok: !err, rss_kb: 0 };
    if (err) {
      const text = userStack(err);
      reply.error = text;
      if (interrupted || /interrupted by `?SIGINT/.test(String(err && err.message))) reply.interrupted = true;
      fs.writeSync(2, text + "\n");
    } else if (value !== undefined) {
      fs.writeSync(1, util.inspect(value, { colors: false, depth: 4 }) + "\n");
    }
    reply.rss_kb = rssKB();
    frame(2, { id: msg.id, end: true });
    frame(1, reply);
    state.running = false;
    setImmediate(pump);
  };
  state.pending = finish;
  const settle = (value) => {
    if (value && typeof value.then === "function") value.then((v) => finish(null, v), (e) => finish(e));
    else finish(null, value);
  };
  let script;
  try {
    script = new vm.Script(msg.code || "", { filename: "<stdin>" });
  } catch (e) {
    if (!(e instanceof SyntaxError) || !/await/.test(e.message)) {
      finish(e);
      armSigint();
      return;
    }
  }
  try {
    if (script) {
      // Synchronous code runs directly: breakOnSigint lets an interrupt stop
      // even a tight loop, and the completion value is the trailing expression.
      settle(script.runInThisContext({ breakOnSigint: true }));
    } else {
      // Top-level await: the REPL's evaluator rewrites the code so its
      // declarations still persist.
      server.eval(msg.code, server.context, "<stdin>", (err, value) => {
        if (err && err.name === "Recoverable") err = err.err || new SyntaxError("Unexpected end of input");
        if (err) finish(err); else settle(value);
      });
    }
  } catch (e) {
    finish(e);
  }
  armSigint();
}

// writeAll writes b whole, also to a non-blocking pipe (node makes stdout
// one once user code touches process.stdout).
function writeAll(fd, b) {
  let off = 0;
  while (off < b.length) {
    try {
      off += fs.writeSync(fd, b, off, b.length - off);
    } catch (e) {
      if (e.code !== "EAGAIN") throw e;
    }
  }
}

// answer runs a checkpoint or restore request (checkpoint_node.js, prepended
// to this file) and sends its reply: a checkpoint's bytes go first, in
// base64 chunk frames on stdout.
function answer(msg) {
  const reply = { id: msg.id, ok: true };
  try {
    if (msg.op === "checkpoint") {
      const max = Number(msg.max) || (64 << 20);
      const { payload, report } = __codexecCheckpoint.take(max);
      // Chunk frames have one fixed shape, which the server reads without
      // a JSON decoder: {"op":"chunk","id":N,"data":"BASE64"}.
      const step = 1 << 20;
      for (let i = 0; i < payload.length; i += step) {
        writeAll(1, Buffer.from(MARK + '{"op":"chunk","id":' + Number(msg.id) + ',"data":"' + payload.subarray(i, i + step).toString("base64") + '"}\n'));
      }
      reply.bytes = payload.length;
      reply.report = report;
    } else if (msg.op === "warm") {
      require("v8");
    } else {
      reply.report = __codexecCheckpoint.restore(Buffer.from(msg.payload.buffer, msg.payload.byteOffset, msg.payload.byteLength), !!msg.fork);
    }
  } catch (e) {
    reply.ok = false;
    if (e && e.tooBig) {
      reply.too_big = true;
      reply.error = "the session's state is over the checkpoint limit of " + msg.max + " bytes";
    } else {
      reply.error = String((e && e.stack) || e).split("\n")[0];
    }
  }
  reply.rss_kb = rssKB();
  frame(2, { id: msg.id, end: true });
  frame(1, reply);
}

process.stdin.destroy();
__codexecCheckpoint.baseline();
frame(1, { op: "ready", pid: process.pid, rss_kb: rssKB() });
