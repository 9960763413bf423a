// codexec session checkpoints for node (prepended to driver_node.js). Runs
// inside the sandbox only: the server never deserialises what this makes.
//
// A checkpoint is a JSON header line and v8.serialize of the values:
//   header: {"imports": [[name, spec, property|null, kind]],
//            "defs": [[name, kind, source, declaration]],
//            "kinds": {name: kind}, "protos": {name: class name},
//            "lost": {name: why}}
// kind says how the name was bound: let, const, class (the global lexical
// scope) or var (a property of globalThis). Functions and classes are not
// serialised but re-evaluated from their source text, which must appear in
// a cell the session ran; modules are required again by name.
const __codexecCheckpoint = (() => {
  const cells = [];
  let cellBytes = 0;
  const requires = new Set();
  const base = { props: new Set(), lexical: new Set() };
  const ident = /^[A-Za-z_$][\w$]*$/;
  let inspectorSession = null;

  function lexicalNames() {
    if (!inspectorSession) {
      const inspector = require("inspector");
      inspectorSession = new inspector.Session();
      inspectorSession.connect();
    }
    let names = [];
    // In-process sessions answer synchronously.
    inspectorSession.post("Runtime.globalLexicalScopeNames", {}, (err, r) => { if (!err) names = r.names; });
    return names;
  }

  // baseline records the driver's own globals, which are never carried.
  function baseline() {
    for (const n of Object.getOwnPropertyNames(globalThis)) base.props.add(n);
    for (const n of lexicalNames()) base.lexical.add(n);
  }

  // noteCell keeps a cell's source: the corpus function sources are
  // checked against, and the modules it requires.
  function noteCell(code) {
    if (!code) return;
    cells.push(code);
    cellBytes += code.length;
    while (cellBytes > (16 << 20) && cells.length > 1) cellBytes -= cells.shift().length;
    for (const m of code.matchAll(/require\(\s*(['"])([^'"\n]+)\1\s*\)/g)) requires.add(m[2]);
  }

  function kindOf(name, lexical) {
    if (!lexical) return "var";
    try {
      require("vm").runInThisContext(name + " = " + name);
      return "let";
    } catch (e) {
      return "const";
    }
  }

  // importOf finds v among the modules the session required: [spec, prop].
  function importOf(v) {
    if (v === null || (typeof v !== "object" && typeof v !== "function")) return null;
    for (const spec of requires) {
      let m;
      try { m = require(spec); } catch (e) { continue; }
      if (m === v) return [spec, null];
      if (m && (typeof m === "object" || typeof m === "function")) {
        for (const k of Object.keys(m)) if (m[k] === v) return [spec, k];
      }
    }
    return null;
  }

  function why(e) {
    const msg = String((e && e.message) || e);
    if (/could not be cloned/.test(msg)) {
      if (/^(async\s+)?(function|\(|[\w$]+\s*=>|class)/.test(msg)) return "holds a function";
      if (/^Symbol\(/.test(msg)) return "holds a symbol";
      return "cannot be serialised: " + msg.slice(0, 60);
    }
    return msg.slice(0, 100);
  }

  const plain = new Set([Object, Array, Map, Set, Date, RegExp, ArrayBuffer, DataView, Boolean, Number, String,
    Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError, Buffer,
    Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
    Float32Array, Float64Array, BigInt64Array, BigUint64Array].map((c) => c.prototype));

  function declaration(src, name) {
    const fn = new RegExp("^(async\\s+)?function\\s*\\*?\\s*" + name.replace(/\$/g, "\\$") + "\\s*\\(");
    const cls = new RegExp("^class\\s+" + name.replace(/\$/g, "\\$") + "[\\s{]");
    return fn.test(src) || cls.test(src);
  }

  function candidates() {
    const out = new Map();
    for (const n of lexicalNames()) if (!base.lexical.has(n)) out.set(n, true);
    for (const n of Object.getOwnPropertyNames(globalThis)) if (!base.props.has(n) && !out.has(n)) out.set(n, false);
    return out;
  }

  function classify(names, h, values) {
    const vm = require("vm");
    for (const [name, lexical] of names) {
      let v;
      try {
        v = lexical ? vm.runInThisContext(name) : globalThis[name];
      } catch (e) {
        h.lost[name] = "uninitialized";
        continue;
      }
      const kind = kindOf(name, lexical);
      const imp = importOf(v);
      if (imp) { h.imports.push([name, imp[0], imp[1], kind]); continue; }
      if (typeof v === "function") {
        const src = Function.prototype.toString.call(v);
        if (/\{\s*\[native code\]\s*\}$/.test(src)) h.lost[name] = "native function";
        else if (!cells.some((c) => c.includes(src))) h.lost[name] = "function without source in the session";
        else h.defs.push([name, kind, src, declaration(src, name)]);
        continue;
      }
      values[name] = v;
      h.kinds[name] = kind;
    }
  }

  // protos keeps the class of top-level instances of the session's own
  // classes; other class instances would come back without their class.
  function protos(h, values) {
    const classes = new Map();
    for (const [name, , , ] of h.defs) {
      try { classes.set(require("vm").runInThisContext(name), name); } catch (e) { /* unreachable name */ }
    }
    for (const [name, v] of Object.entries(values)) {
      if (v === null || typeof v !== "object") continue;
      const p = Object.getPrototypeOf(v);
      if (p === null || plain.has(p)) continue;
      const cls = p.constructor;
      if (classes.has(cls)) { h.protos[name] = classes.get(cls); continue; }
      h.lost[name] = "instance of " + ((cls && cls.name) || "a class") + ", whose class is not carried";
      delete values[name];
      delete h.kinds[name];
    }
  }

  function serialize(h, values, max) {
    const v8 = require("v8");
    try {
      return v8.serialize(values);
    } catch (e) {
      for (const n of Object.keys(values)) {
        try { v8.serialize(values[n]); } catch (e2) { h.lost[n] = why(e2); delete values[n]; delete h.kinds[n]; }
      }
      return v8.serialize(values);
    }
  }

  // take returns {payload, report}, or throws {tooBig: true}.
  function take(max) {
    const h = { imports: [], defs: [], kinds: {}, protos: {}, lost: {} };
    const values = {};
    classify(candidates(), h, values);
    protos(h, values);
    const data = serialize(h, values, max);
    const hb = Buffer.from(JSON.stringify(h) + "\n");
    if (hb.length + data.length > max) throw { tooBig: true };
    const report = { values: Object.keys(values).sort(), defs: h.defs.map((d) => d[0]).sort(),
      modules: h.imports.map((i) => i[0]).sort(), lost: h.lost };
    return { payload: Buffer.concat([hb, data]), report };
  }

  function bind(name, kind, value) {
    if (kind === "var" || !ident.test(name)) { globalThis[name] = value; return; }
    globalThis.__codexecValue = value;
    try {
      require("vm").runInThisContext(kind + " " + name + " = globalThis.__codexecValue;");
    } finally {
      delete globalThis.__codexecValue;
    }
  }

  function restoreDefs(h, report) {
    const vm = require("vm");
    for (const [name, kind, src, decl] of h.defs) {
      try {
        if (decl && kind !== "const") {
          vm.runInThisContext(src);
          if (kind === "var" && !(name in globalThis)) bind(name, kind, vm.runInThisContext(name));
        } else {
          bind(name, kind, vm.runInThisContext("(" + src + ")"));
        }
        report.defs.push(name);
      } catch (e) {
        report.lost[name] = "re-creating it failed: " + why(e);
      }
    }
  }

  function restoreValues(h, data, report) {
    let values;
    try {
      values = require("v8").deserialize(data);
    } catch (e) {
      for (const n of Object.keys(h.kinds)) report.lost[n] = "deserialising failed: " + why(e);
      return;
    }
    for (const [name, v] of Object.entries(values)) {
      try {
        if (h.protos[name]) Object.setPrototypeOf(v, require("vm").runInThisContext(h.protos[name]).prototype);
        bind(name, h.kinds[name] || "var", v);
        report.values.push(name);
      } catch (e) {
        report.lost[name] = why(e);
      }
    }
  }

  // restore re-creates a checkpoint's state in this (fresh) process.
  function restore(payload, fork) {
    const nl = payload.indexOf(10);
    const h = JSON.parse(payload.subarray(0, nl).toString("utf8"));
    const report = { values: [], defs: [], modules: [], lost: {}, notes: [] };
    for (const [name, spec, prop, kind] of h.imports) {
      try {
        const m = require(spec);
        bind(name, kind, prop === null ? m : m[prop]);
        requires.add(spec);
        report.modules.push(name);
      } catch (e) {
        report.lost[name] = "import failed: " + why(e);
      }
    }
    restoreDefs(h, report);
    for (const d of h.defs) cells.push(d[2]);
    restoreValues(h, payload.subarray(nl + 1), report);
    report.notes.push(fork ? "a new node process: Math.random has a fresh seed" : "Math.random has a fresh seed");
    for (const k of ["values", "defs", "modules"]) report[k].sort();
    return report;
  }

  return { baseline, noteCell, take, restore };
})();
