// Warm runner stub (see warm.go). Runs as the -e program of a node that has
// finished its bootstrap; waits on fd 3 for one run, applies it, then
// evaluates the code once as `node -e CODE ARGS…` would.
(function () {
  const fs = require('fs'), path = require('path'), vm = require('vm'), Module = require('module');
  // The stdio streams are created on first use (~5 ms: stream and pipe
  // modules); create them now, on the same descriptors the run will use.
  process.stdout;
  process.stderr;
  // A container runner (container_warm_node.go) is given a descriptor for
  // "R" and its exit status; others say "R" on fd 3.
  const statusFd = process.argv.length > 1 ? Number(process.argv[1]) : -1;
  fs.writeSync(statusFd >= 0 ? statusFd : 3, 'R');
  let buf = Buffer.alloc(0);
  const chunk = Buffer.alloc(65536);
  const more = () => {
    const n = fs.readSync(3, chunk, 0, chunk.length, null);
    if (n === 0) process.reallyExit(125);
    buf = Buffer.concat([buf, chunk.subarray(0, n)]);
  };
  while (buf.indexOf(10) < 0) more();
  const nl = buf.indexOf(10), need = Number(buf.subarray(0, nl).toString());
  buf = buf.subarray(nl + 1);
  while (buf.length < need) more();
  fs.closeSync(3);
  const f = buf.toString('utf8').split('\0');
  const cwd = f[0], nenv = Number(f[1]);
  const env = f.slice(2, 2 + nenv), rest = f.slice(2 + nenv);
  process.chdir(cwd);
  for (const k of Object.keys(process.env)) delete process.env[k];
  for (const kv of env) {
    const i = kv.indexOf('=');
    process.env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  process.argv = [process.argv[0], ...rest.slice(1)];
  // node's flags, then the run's code, as `node -e CODE` would have them.
  const e = process.execArgv.lastIndexOf('-e');
  process.execArgv = [...process.execArgv.slice(0, e < 0 ? process.execArgv.length : e), '-e', rest[0]];
  if (statusFd >= 0) {
    // First of the exit listeners: output written so far is in its pipes
    // (synchronous for pipes); the server also waits for their end.
    process.on('exit', (code) => {
      try { fs.writeSync(statusFd, 'X' + (code & 0xff) + '\n'); } catch (e) { }
    });
  }
  Module._initPaths();
  const name = '[eval]', m = new Module(name);
  m.filename = path.join(cwd, name);
  m.paths = Module._nodeModulePaths(cwd);
  globalThis.module = m;
  globalThis.exports = m.exports;
  globalThis.require = Module.createRequire(m.filename);
  globalThis.__filename = name;
  globalThis.__dirname = '.';
  vm.runInThisContext(rest[0], { filename: name, displayErrors: true });
})();
//# sourceURL=node:codexec/runner
