// Fidelity probe: prints one JSON object describing the node it runs in, as a
// fresh `node -e` would see itself. Globals are taken first.
const g0 = Object.keys(globalThis).sort();
const nodeFs = require('fs'), nodeCrypto = require('crypto');
function stream(s) {
  const out = {};
  for (const k of ['isTTY', 'writable', 'readable', 'fd', '_type', 'writableHighWaterMark', 'readableHighWaterMark', 'columns']) out[k] = s[k];
  out.ctor = s.constructor && s.constructor.name;
  out.handle = s._handle && s._handle.constructor && s._handle.constructor.name;
  out.blocking = s._handle && typeof s._handle.setBlocking === 'function' ? 'settable' : 'n/a';
  return out;
}
function statusLines() {
  const out = {};
  for (const line of nodeFs.readFileSync('/proc/self/status', 'utf8').split('\n')) {
    const [k, v] = line.split(':');
    if (['SigBlk', 'SigIgn', 'SigCgt', 'NoNewPrivs', 'Seccomp', 'CapEff'].includes(k)) out[k] = v.trim();
  }
  return out;
}
// Descriptors: stdio by number, node's own (event loop, signal pipes,
// workers) by kind, as their numbers depend on start-up order.
function fds() {
  const out = {}, own = [];
  for (const fd of nodeFs.readdirSync('/proc/self/fd')) {
    try {
      const t = nodeFs.readlinkSync('/proc/self/fd/' + fd);
      const kind = t.includes(':[') ? t.split(':')[0] : t;
      if (Number(fd) <= 2) out[fd] = kind; else own.push(kind);
    } catch (e) { }
  }
  out.own = own.sort().join(' ');
  return out;
}
const short = (a) => a.map((s) => (s.length < 100 ? s : '<' + s.length + ' characters>'));
function limits() {
  return nodeFs.readFileSync('/proc/self/limits', 'utf8').split('\n').filter(Boolean);
}
// stdin is read by a child with a time limit: a stdin that does not end
// shows as such instead of blocking the probe.
// A code mode run or a session has a name fidelity: it does not read stdin.
const cat = typeof fidelity !== 'undefined' ? null : require('child_process').spawnSync('cat', { stdio: [0, 'pipe', 'pipe'], timeout: 2000, encoding: 'utf8' });
const stdinText = cat === null ? 'not read' : cat.error || cat.signal ? 'does not end' : cat.stdout;
const probe = {
  globals: g0,
  argv: process.argv.slice(1),
  argv0: process.argv0,
  execArgv: short(process.execArgv),
  execPath: process.execPath,
  title: process.title,
  requireMain: require.main === undefined ? 'undefined' : (require.main === module ? 'module' : 'other'),
  moduleId: typeof module === 'undefined' ? null : module.id,
  moduleFilename: typeof module === 'undefined' ? null : module.filename,
  modulePaths: typeof module === 'undefined' ? null : module.paths,
  filename: typeof __filename === 'undefined' ? null : __filename,
  dirname: typeof __dirname === 'undefined' ? null : __dirname,
  stdout: stream(process.stdout),
  stderr: stream(process.stderr),
  stdin: stream(process.stdin),
  stdinText,
  env: process.env,
  cwd: process.cwd(),
  umask: process.umask().toString(8),
  limits: limits(),
  status: statusLines(),
  fds: fds(),
  listeners: ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'uncaughtException', 'unhandledRejection', 'warning'].map((e) => e + ':' + process.listenerCount(e)),
  exitCode: process.exitCode === undefined ? 'undefined' : process.exitCode,
  ids: [process.getuid(), process.geteuid(), process.getgid(), process.getegid(), process.getgroups().sort()],
  perRun: { random: Math.random(), uuid: nodeCrypto.randomUUID(), pid: process.pid },
};
console.log(JSON.stringify(probe));
