// redlimit's rate-limiting scripts from Node, with ioredis.
//
// Everything this module knows about a script comes from the manifest that
// luagen writes next to the Go bindings, bindings/scripts.json (described by
// bindings/scripts.schema.json): the script's file and SHA1, the command to call
// it with, what each KEYS and ARGV position means, each argument's type,
// unit, bounds and words, the reply's elements and the error codes. Nothing
// about a particular script is written here, so a script added to the
// bundle is callable the day its manifest entry appears.
//
//   import { Redis } from 'ioredis';
//   import { Bundle, NEVER } from './redlimit.js';
//
//   const bundle = Bundle.load('bindings/scripts.json');
//   const redis = new Redis();
//   const reply = await bundle.script('gcra').run(redis, ['rl:{user:42}'],
//     { burst: 10, rate: 10, period: 1000, take: 'all', requests: [{ cost: 1 }] });
//   const d = reply.decisions[0]; // one per request
//   if (d.allowed !== 1) setTimeout(retry, d.retryAfter); // ms; NEVER (Infinity) when the cost can never pass
//
// Names are the manifest's in camelCase (retry_after is retryAfter).
// Values follow the manifest's types, the JavaScript way: int is a safe
// integer Number, bool a boolean, string and enum a string, durations (ms,
// us, s) a Number of milliseconds that must be a whole number of the wire
// unit (never rounded), instants (unix_ms, unix_us, unix_s) a Date, rounded
// down to the unit, or null for 0, which the bundled scripts read as "use
// the server's clock" (so an instant argument may be left out). Bounds are
// checked before anything is sent (ArgError); the scripts check them again,
// and what only the server can tell (a caller clock more than 60 s from its
// TIME) comes back as a ScriptError with code BADARG.
//
// A field's sentinels are wire values outside its bounds that mean
// something else, and the manifest names them: a duration's never decodes
// to NEVER, which is Infinity, so `d.retryAfter > budget` reads right
// without a special case (and NEVER is sent as it); an instant's 0
// (server_clock) is null both ways; any other sentinel comes back as
// sentinel(name), and is sent when passed as one.
//
// A variadic record (multi.lua's limits: burst, rate, period; gcra.lua's
// requests: cost, deadline) takes an array of objects keyed by the record's
// field names in camelCase (an instant field may be left out, as an instant
// argument may) and comes back as an array of such objects;
// min_count/max_count bound how many, and a string's pattern must match the
// whole string. All of it is checked before anything is sent.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// The manifest version this module reads; a new one changes what a field
// means, so it is refused rather than half understood.
export const MANIFEST_VERSION = 3;

// A duration that never ends: what a duration's sentinel never decodes to.
export const NEVER = Infinity;

// A field's named sentinel (the manifest's sentinels): pass sentinel('x')
// to send it; a reply element holding one decodes to it (but a duration's
// never, which is NEVER, and an instant's 0, null). The same name gives
// the same object, so === compares.
const sentinels = new Map();
export function sentinel(name) {
  if (!sentinels.has(name)) sentinels.set(name, Object.freeze({ sentinel: name }));
  return sentinels.get(name);
}

const US_PER_UNIT = { milliseconds: 1000, microseconds: 1, seconds: 1_000_000 };
const DURATIONS = new Set(['ms', 'us', 's']);
const INSTANTS = new Set(['unix_ms', 'unix_us', 'unix_s']);
const SCALARS = new Set(['int', 'float', 'bool', 'string', 'enum']);
// An integer as Redis writes one: what the scripts accept, and what a reply
// element that the manifest says "a string holding a decimal integer" holds.
const INTEGER = /^-?(0|[1-9][0-9]*)$/;

export class RedlimitError extends Error {
  get name() { return this.constructor.name; }
}

// The manifest, or a file it names, cannot be used.
export class ManifestError extends RedlimitError {}

// An argument the manifest refuses; nothing was sent.
export class ArgError extends RedlimitError {
  constructor(script, argument, reason) {
    super(`${script}: argument ${argument}: ${reason}`);
    Object.assign(this, { script, argument, reason });
  }
}

// A reply that does not fit the manifest's returns.
export class ReplyError extends RedlimitError {}

// An error reply whose first word is one of the script's error codes (the
// manifest's errors), such as BADARG for bad input.
export class ScriptError extends RedlimitError {
  constructor(script, code, detail, cause) {
    super(`${script}: ${code} ${detail}`, { cause });
    Object.assign(this, { script, code, detail });
  }
}

// The server holds other code under the library's name, without this
// script's function: run bundle.loadFunctions to replace it.
export class FunctionsStaleError extends RedlimitError {}

export const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

function checkField(script, f) {
  const t = f.type;
  if (t === 'record') {
    if (!f.variadic || !(f.fields?.length >= 2)) throw new ManifestError(`${script}: ${f.name}: a record is variadic and has two fields or more`);
    for (const sub of f.fields) {
      if (sub.type === 'record') throw new ManifestError(`${script}: ${f.name}: a record inside a record`);
      checkField(script, sub);
    }
    return;
  }
  if (f.pattern !== undefined) {
    // luagen allows only what Go, Python and JavaScript (u flag) read alike.
    Object.defineProperty(f, 're', { value: new RegExp(`^(?:${f.pattern})$`, 'u') });
  }
  if (DURATIONS.has(t) || INSTANTS.has(t)) {
    if (!(f.unit in US_PER_UNIT)) throw new ManifestError(`${script}: ${f.name}: type ${t} without a known unit`);
  } else if (!SCALARS.has(t)) {
    throw new ManifestError(`${script}: ${f.name}: unknown type ${JSON.stringify(t)}`);
  }
  if (t === 'enum' && !(f.enum?.length > 0)) throw new ManifestError(`${script}: ${f.name}: enum without words`);
}

const range = (f) => `[${f.min ?? ''}..${f.max ?? ''}]${(f.sentinels ?? []).map((x) => ` or ${x.value}`).join('')}`;
const outside = (f, n) => !(f.sentinels ?? []).some((x) => x.value === n) &&
  ((f.min !== undefined && n < f.min) || (f.max !== undefined && n > f.max));
const countRange = (f) => `[${f.min_count ?? ''}..${f.max_count ?? ''}]`;
const badCount = (f, n) => (f.min_count !== undefined && n < f.min_count) || (f.max_count !== undefined && n > f.max_count);

// Digits and a point, never an exponent: Lua's tonumber in some servers
// (miniredis) refuses 1e-7.
function decimal(x) {
  const s = String(x);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, lead, frac = '', e] = m;
  const digits = lead + frac;
  const exp = Number(e);
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  return sign + digits + '0'.repeat(exp - frac.length);
}

const isRedisError = (e) => e instanceof Error && !(e instanceof RedlimitError) && typeof e.message === 'string';

export class Script {
  constructor(entry, base, library) {
    this.name = entry.name;
    this.command = entry.command;
    this.sha1 = entry.sha1;
    this.keys = entry.keys;
    this.args = entry.args;
    this.returns = entry.returns;
    this.errors = new Set(entry.errors.map((e) => e.code));
    this.function = entry.function ?? null;
    this.library = library;
    for (const f of [...this.args, ...this.returns]) checkField(this.name, f);
    for (const group of [this.keys, this.args, this.returns]) {
      if (group.slice(0, -1).some((f) => f.variadic)) throw new ManifestError(`${this.name}: only the last of a list may be variadic`);
    }
    const path = join(base, ...entry.file.split('/'));
    try {
      this.source = readFileSync(path);
    } catch (e) {
      throw new ManifestError(`${this.name}: ${e.message}`, { cause: e });
    }
    if (createHash('sha1').update(this.source).digest('hex') !== this.sha1) {
      throw new ManifestError(`${this.name}: ${path} does not match the manifest's sha1: regenerate the manifest, or copy the files together`);
    }
  }

  // Checks keys and args against the manifest and returns the KEYS and ARGV
  // to send, ARGV in the manifest's order.
  encode(keys, args = {}) {
    const n = this.keys.length;
    const variadicKey = n > 0 && this.keys[n - 1].variadic;
    if (!Array.isArray(keys) || !(keys.length === n || (variadicKey && keys.length >= n - 1))) {
      const names = this.keys.map((k) => k.name).join(', ');
      throw new ArgError(this.name, 'keys', `takes ${variadicKey ? `at least ${n - 1}` : n} key(s) (${names}), got ${Array.isArray(keys) ? keys.length : typeof keys}`);
    }
    if (variadicKey) {
      const last = this.keys[n - 1];
      const rest = keys.slice(n - 1);
      if (badCount(last, rest.length)) throw new ArgError(this.name, camel(last.name), `${rest.length} keys: the count is out of range ${countRange(last)}`);
      if (last.fields) keys = [...keys.slice(0, n - 1), ...rest.flatMap((r) => this.#record(last, r, (sub, name, v) => v))];
    }
    for (const k of keys) {
      if (typeof k !== 'string' && !Buffer.isBuffer(k)) throw new ArgError(this.name, 'keys', `a key must be a string or Buffer, got ${typeof k}`);
    }
    const known = new Set(this.args.map((a) => camel(a.name)));
    for (const name of Object.keys(args)) {
      if (!known.has(name)) throw new ArgError(this.name, name, `no such argument; takes ${[...known].join(', ')}`);
    }
    const argv = [];
    for (const f of this.args) {
      const name = camel(f.name);
      // A variadic that may be empty (a settle after the deadline) may be
      // left out.
      const optional = f.variadic && f.min_count === 0;
      const v = args[name] === undefined && optional ? [] : args[name];
      if (v === undefined && !INSTANTS.has(f.type)) throw new ArgError(this.name, name, 'missing');
      if (f.variadic) {
        if (!Array.isArray(v)) throw new ArgError(this.name, name, 'takes an array of values (the rest of ARGV)');
        if (badCount(f, v.length)) throw new ArgError(this.name, name, `${v.length} ${f.type === 'record' ? 'records' : 'values'}: the count is out of range ${countRange(f)}`);
        for (const x of v) {
          if (f.type === 'record') argv.push(...this.#record(f, x, (sub, subName, y) => this.#encodeValue(sub, subName, y)));
          else argv.push(this.#encodeValue(f, name, x));
        }
      } else {
        argv.push(this.#encodeValue(f, name, v));
      }
    }
    return { keys, argv };
  }

  // One record (an object by the record's field names, in camelCase),
  // field by field in the manifest's order.
  #record(f, rec, encode) {
    const names = f.fields.map((sub) => camel(sub.name));
    if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
      throw new ArgError(this.name, camel(f.name), `each record is an object of ${names.join(', ')}, got ${Array.isArray(rec) ? 'an array' : typeof rec}`);
    }
    for (const k of Object.keys(rec)) {
      if (!names.includes(k)) throw new ArgError(this.name, camel(f.name), `record field ${k}: no such field; takes ${names.join(', ')}`);
    }
    return f.fields.map((sub, i) => {
      if (rec[names[i]] === undefined && !INSTANTS.has(sub.type)) throw new ArgError(this.name, names[i], `missing from a record of ${camel(f.name)}`);
      return encode(sub, names[i], rec[names[i]] ?? null);
    });
  }

  #encodeValue(f, name, v) {
    const fail = (reason) => { throw new ArgError(this.name, name, reason); };
    const t = f.type;
    const named = f.sentinels ?? [];
    if (v !== null && typeof v === 'object' && 'sentinel' in v) {
      const s = named.find((x) => x.name === v.sentinel);
      if (!s) fail(`has no sentinel ${v.sentinel}; it has ${named.map((x) => x.name).join(', ') || 'none'}`);
      return String(s.value);
    }
    if (DURATIONS.has(t) && v === NEVER && named.some((x) => x.name === 'never')) return String(named.find((x) => x.name === 'never').value);
    let n;
    switch (true) {
      case t === 'string':
        if (typeof v !== 'string' && !Buffer.isBuffer(v)) fail(`must be a string, got ${typeof v}`);
        if (f.re && !f.re.test(Buffer.isBuffer(v) ? v.toString('utf8') : v)) fail(`${JSON.stringify(String(v))} does not match ${f.pattern}`);
        return v;
      case t === 'enum':
        if (!f.enum.includes(v)) fail(`must be one of ${f.enum.join(', ')}, got ${JSON.stringify(v)}`);
        return v;
      case t === 'bool':
        if (typeof v !== 'boolean') fail(`must be a boolean, got ${typeof v}`);
        return v ? '1' : '0';
      case t === 'float':
        if (typeof v !== 'number' || !Number.isFinite(v)) fail(`must be a finite number, got ${v}`);
        if (outside(f, v)) fail(`${v} is out of range ${range(f)}`);
        return decimal(v);
      case t === 'int':
        if (!Number.isSafeInteger(v)) fail(`must be a safe integer, got ${typeof v === 'number' ? v : typeof v}`);
        n = v;
        break;
      case DURATIONS.has(t): {
        // Milliseconds in, the wire unit out, exactly: a value that is not a
        // whole number of the unit is refused, never rounded.
        if (typeof v !== 'number' || !Number.isFinite(v)) fail(`must be a Number of milliseconds, got ${typeof v === 'number' ? v : typeof v}`);
        const exact = (v * 1000) / US_PER_UNIT[f.unit];
        n = Math.round(exact);
        if (Math.abs(exact - n) > 1e-9 * Math.max(1, Math.abs(n)) || !Number.isSafeInteger(n)) fail(`${v} ms is not a whole number of ${f.unit}`);
        break;
      }
      default: // an instant
        if (v === null || v === undefined) {
          n = 0;
        } else if (!(v instanceof Date) || Number.isNaN(v.getTime())) {
          fail(`must be a valid Date or null, got ${v}`);
        } else {
          n = Math.floor((v.getTime() * 1000) / US_PER_UNIT[f.unit]); // rounded down
          // 0 is the scripts' word for "the server's clock": a Date that
          // rounds to it is refused, not quietly turned into another clock.
          if (n === 0) fail(`${v.toISOString()} rounds to 0 ${f.unit}, which reads as the server's clock: pass null for that`);
        }
    }
    if (outside(f, n)) fail(`${n}${f.unit ? ` ${f.unit}` : ''} is out of range ${range(f)}`);
    return String(n);
  }

  // Reads a reply by the manifest's returns into an object with a
  // camelCase property per return.
  decode(reply) {
    const rets = this.returns;
    const variadic = rets.length > 0 && rets[rets.length - 1].variadic;
    if (!Array.isArray(reply)) {
      if (rets.length !== 1 || variadic) throw new ReplyError(`${this.name}: reply is ${JSON.stringify(reply)}, not a list of ${rets.length}`);
      reply = [reply]; // a script with one return may reply with the bare value
    }
    const fixed = variadic ? rets.length - 1 : rets.length;
    if (reply.length < fixed || (!variadic && reply.length !== fixed)) {
      throw new ReplyError(`${this.name}: reply has ${reply.length} elements, the manifest lists ${rets.length}: ${JSON.stringify(reply)}`);
    }
    const out = {};
    rets.slice(0, fixed).forEach((f, i) => { out[camel(f.name)] = this.#decodeValue(f, reply[i]); });
    if (variadic) {
      const f = rets[fixed];
      const rest = reply.slice(fixed);
      let values;
      if (f.type === 'record') {
        const size = f.fields.length;
        if (rest.length % size) throw new ReplyError(`${this.name}: ${f.name} has ${rest.length} elements, not whole records of ${size}`);
        values = [];
        for (let i = 0; i < rest.length; i += size) {
          const rec = {};
          f.fields.forEach((sub, k) => { rec[camel(sub.name)] = this.#decodeValue(sub, rest[i + k]); });
          values.push(Object.freeze(rec));
        }
      } else {
        values = rest.map((v) => this.#decodeValue(f, v));
      }
      if (badCount(f, values.length)) throw new ReplyError(`${this.name}: ${f.name} has ${values.length}, want ${countRange(f)}`);
      out[camel(f.name)] = values;
    }
    return Object.freeze(out);
  }

  #decodeValue(f, v) {
    const fail = (want) => { throw new ReplyError(`${this.name}: reply element ${f.name} is ${JSON.stringify(v)}, want ${want}`); };
    if (Buffer.isBuffer(v)) v = v.toString('utf8');
    const t = f.type;
    if (t === 'string') {
      if (typeof v !== 'string') fail('a string');
      return !f.re || f.re.test(v) ? v : fail(`a string matching ${f.pattern}`);
    }
    if (t === 'enum') return f.enum.includes(v) ? v : fail(`one of ${f.enum.join(', ')}`);
    if (t === 'bool') return v === 1 || v === 0 || typeof v === 'boolean' ? Boolean(v) : fail('1 or 0');
    if (t === 'float') {
      const x = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
      if (Number.isNaN(x)) fail('a number');
      if (outside(f, x)) fail(`a value in ${range(f)}`);
      return x;
    }
    let n;
    if (Number.isSafeInteger(v)) n = v;
    else if (typeof v === 'string' && INTEGER.test(v) && Number.isSafeInteger(Number(v))) n = Number(v);
    else fail('an integer');
    const s = (f.sentinels ?? []).find((x) => x.value === n);
    if (s) {
      if (DURATIONS.has(t) && s.name === 'never') return NEVER;
      if (INSTANTS.has(t)) return null; // an instant's sentinel is 0, the zero time
      return sentinel(s.name);
    }
    if (outside(f, n)) fail(`a value in ${range(f)}`);
    if (t === 'int') return n;
    const us = n * US_PER_UNIT[f.unit];
    if (DURATIONS.has(t)) return us / 1000;
    return n === 0 ? null : new Date(Math.floor(us / 1000));
  }

  // Runs the script with the manifest's command (EVALSHA or EVALSHA_RO)
  // and, when the server answers NOSCRIPT (a restart, a failover, SCRIPT
  // FLUSH), once more with EVAL / EVAL_RO and the file.
  async run(client, keys, args) {
    let argv;
    ({ keys, argv } = this.encode(keys, args));
    let reply;
    try {
      try {
        reply = await client.call(this.command, this.sha1, keys.length, ...keys, ...argv);
      } catch (e) {
        if (!(isRedisError(e) && e.message.startsWith('NOSCRIPT'))) throw e;
        reply = await client.call(this.command.replace('SHA', ''), this.source, keys.length, ...keys, ...argv);
      }
    } catch (e) {
      throw this.#error(e);
    }
    return this.decode(reply);
  }

  // Runs the script's function in the Functions library (FCALL or
  // FCALL_RO). Where the server has no such function and no library of that
  // name (FUNCTION FLUSH, a restart without persistence), it loads the
  // library and calls once more; it never replaces a library that is there
  // (bundle.loadFunctions does, at deploy time).
  async fcall(client, keys, args) {
    if (!this.function || !this.library) throw new ManifestError(`${this.name}: the manifest names no Functions library for it`);
    let argv;
    ({ keys, argv } = this.encode(keys, args));
    const call = () => client.call(this.function.command, this.function.name, keys.length, ...keys, ...argv);
    let reply;
    try {
      try {
        reply = await call();
      } catch (e) {
        if (!(isRedisError(e) && /function not found/i.test(e.message))) throw e;
        await this.library.load(client, { replace: false });
        reply = await call();
      }
    } catch (e) {
      throw this.#error(e);
    }
    return this.decode(reply);
  }

  #error(e) {
    if (!isRedisError(e)) return e;
    // Some servers put ERR before the script's own code.
    const msg = e.message.startsWith('ERR ') ? e.message.slice(4) : e.message;
    const sp = msg.indexOf(' ');
    const code = sp < 0 ? msg : msg.slice(0, sp);
    return this.errors.has(code) ? new ScriptError(this.name, code, sp < 0 ? '' : msg.slice(sp + 1), e) : e;
  }
}

// The bundle's Redis Functions library (Redis 7.0 or later).
export class Library {
  constructor(name, path) {
    this.name = name;
    try {
      this.code = readFileSync(path);
    } catch (e) {
      throw new ManifestError(`functions library ${name}: ${e.message}`, { cause: e });
    }
  }

  // FUNCTION LOAD [REPLACE] of the library file, as is. Without replace, a
  // library of the same name already there is a FunctionsStaleError.
  async load(client, { replace = true } = {}) {
    try {
      await client.call('FUNCTION', 'LOAD', ...(replace ? ['REPLACE'] : []), this.code);
    } catch (e) {
      if (isRedisError(e) && /already exists/.test(e.message)) {
        throw new FunctionsStaleError(`the server holds another library named ${this.name}: load this one with bundle.loadFunctions`, { cause: e });
      }
      throw e;
    }
  }
}

// The scripts a manifest lists, by name: bundle.script('gcra').
export class Bundle {
  constructor(manifest, base) {
    if (manifest.version !== MANIFEST_VERSION) {
      throw new ManifestError(`manifest version ${JSON.stringify(manifest.version)}: this module reads version ${MANIFEST_VERSION}`);
    }
    const lib = manifest.functions;
    this.library = lib ? new Library(lib.library, join(base, ...lib.file.split('/'))) : null;
    this.scripts = new Map(manifest.scripts.map((e) => [e.name, new Script(e, base, this.library)]));
  }

  // Reads a luagen manifest (scripts.json) and every file it names,
  // relative to the manifest's folder. path may be a file: URL.
  static load(path) {
    const file = path instanceof URL ? fileURLToPath(path) : resolve(path);
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    return new Bundle(manifest, dirname(file));
  }

  script(name) {
    const s = this.scripts.get(name);
    if (!s) throw new RangeError(`no script ${JSON.stringify(name)} in the manifest; it has ${[...this.scripts.keys()].sort().join(', ')}`);
    return s;
  }

  has(name) { return this.scripts.has(name); }

  [Symbol.iterator]() { return this.scripts.values(); }

  // Loads the Functions library, replacing any older version under its name
  // (FUNCTION LOAD REPLACE): run it when you deploy.
  async loadFunctions(client) {
    if (!this.library) throw new ManifestError('the manifest names no Functions library');
    await this.library.load(client, { replace: true });
  }
}
