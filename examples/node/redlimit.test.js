// Unit tests of redlimit.js's manifest handling, with a fake client:
//   (cd examples/node && npm test)
// The real-server tests are in tests/polyglot (go test), which runs these too.

import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ReplyError as RedisReplyError } from 'ioredis';
import { ArgError, Bundle, FunctionsStaleError, ManifestError, NEVER, ReplyError, Script, ScriptError, sentinel } from './redlimit.js';
import { parseCallArgs } from './cli-args.js';

const MANIFEST = new URL('../../bindings/scripts.json', import.meta.url);
const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
const bundle = Bundle.load(MANIFEST);

// Answers call() from a list of replies (an Error is thrown), and records
// every command.
function fake(...replies) {
  const sent = [];
  return {
    sent,
    async call(...args) {
      sent.push(args);
      const r = replies.shift();
      if (r instanceof Error) throw r;
      return r;
    },
  };
}

// The generic tests run leaky_bucket.lua, a script of one request.
const lbArgs = { capacity: 3, rate: 3, period: 3000, cost: 1 };

test('every script of the manifest loads with its file', () => {
  assert.deepEqual([...bundle].map((s) => s.name).sort(), manifest.scripts.map((s) => s.name).sort());
  assert.ok(bundle.has('gcra') && bundle.has('token_bucket'));
  assert.throws(() => bundle.script('nope'), /no script "nope"/);
});

test('ARGV in the manifest order, in wire units', () => {
  const lb = bundle.script('leaky_bucket');
  const now = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  const { keys, argv } = lb.encode(['k'], { cost: 1, period: 3_600_000, rate: 3, capacity: 5, now });
  assert.deepEqual(keys, ['k']);
  const want = { capacity: '5', rate: '3', period: '3600000', cost: '1', now: String(now.getTime() * 1000), deadline: '0' };
  // settle, a variadic that may be empty, left out: nothing is sent.
  assert.deepEqual(argv, lb.args.filter((a) => a.name !== 'settle').map((a) => want[a.name]));
  assert.equal(lb.encode(['k'], { cost: 1, period: 1000, rate: 3, capacity: 5, settle: ['refund'] }).argv.at(-1), 'refund');
  assert.equal(lb.encode(['k'], lbArgs).argv.at(-1), '0', 'a left-out instant is 0, the server clock');
});

test('refusals send nothing', async () => {
  const lb = bundle.script('leaky_bucket');
  const cases = {
    'below min': { ...lbArgs, capacity: 0 },
    'above max': { ...lbArgs, cost: 1e9 + 1 },
    'fraction for int': { ...lbArgs, rate: 2.5 },
    'string for int': { ...lbArgs, rate: '3' },
    'part of a ms': { ...lbArgs, period: 1.5 },
    'epoch reads as server clock': { ...lbArgs, now: new Date(0) },
    'unknown (snake_case is not the JS name)': { ...lbArgs, capacity_max: 3 },
    missing: { capacity: 3, period: 1000, cost: 1 },
  };
  for (const [name, args] of Object.entries(cases)) {
    const r = fake();
    await assert.rejects(lb.run(r, ['k'], args), ArgError, name);
    assert.deepEqual(r.sent, [], name);
  }
  for (const keys of [[], ['a', 'b'], [1], 'k']) assert.throws(() => lb.encode(keys, lbArgs), ArgError);
});

test('enum words from the manifest', () => {
  const tb = bundle.script('token_bucket');
  const words = tb.args.find((a) => a.name === 'refill').enum;
  for (const refill of words) assert.ok(tb.encode(['k'], { capacity: 3, rate: 3, period: 1000, refill, requests: [{ cost: 1 }] }).argv.includes(refill));
  assert.throws(() => tb.encode(['k'], { capacity: 3, rate: 3, period: 1000, refill: 'Smooth', requests: [{ cost: 1 }] }), /must be one of/);
});

test('the reply by the manifest', () => {
  const lb = bundle.script('leaky_bucket');
  assert.deepEqual(lb.decode([1, '2', 0, 1200000]), { allowed: true, remaining: 2, retryAfter: 0, resetAfter: 1_200_000 });
  assert.equal(lb.decode([0, 3, -1, 0]).retryAfter, NEVER);
  for (const bad of [[1, 2, 0], [1, 2, 0, 0, 0], [2, 2, 0, 0], [1, -1, 0, 0], [1, 2, 0, -1], [1, '2.5', 0, 0], [1, ' 2', 0, 0], 7]) {
    assert.throws(() => lb.decode(bad), ReplyError, JSON.stringify(bad));
  }
});

test('NOSCRIPT falls back to EVAL with the file', async () => {
  const lb = bundle.script('leaky_bucket');
  const r = fake(new RedisReplyError('NOSCRIPT No matching script. Please use EVAL.'), [1, 2, 0, 1000]);
  const d = await lb.run(r, ['k'], lbArgs);
  assert.equal(d.allowed, true);
  assert.deepEqual(r.sent.map((c) => c[0]), ['EVALSHA', 'EVAL']);
  assert.equal(r.sent[0][1], lb.sha1);
  assert.deepEqual(r.sent[1][1], lb.source);
  assert.deepEqual(r.sent[0].slice(2), r.sent[1].slice(2));
});

test('error codes become ScriptErrors, other errors pass through', async () => {
  const lb = bundle.script('leaky_bucket');
  for (const msg of ['BADARG now must be 0', 'ERR BADARG now must be 0']) {
    const err = await lb.run(fake(new RedisReplyError(msg)), ['k'], lbArgs).catch((e) => e);
    assert.ok(err instanceof ScriptError, msg);
    assert.deepEqual([err.code, err.detail], ['BADARG', 'now must be 0']);
  }
  const err = await lb.run(fake(new RedisReplyError('OOM command not allowed')), ['k'], lbArgs).catch((e) => e);
  assert.ok(err instanceof RedisReplyError && !(err instanceof ScriptError));
});

test('FCALL loads a missing library once, and never replaces another', async () => {
  const lb = bundle.script('leaky_bucket');
  const r = fake(new RedisReplyError('ERR Function not found'), 'redlimit', [0, 0, 5, 5]);
  const d = await lb.fcall(r, ['k'], lbArgs);
  assert.equal(d.allowed, false);
  assert.deepEqual(r.sent[0].slice(0, 2), [lb.function.command, lb.function.name]);
  assert.deepEqual(r.sent[1], ['FUNCTION', 'LOAD', bundle.library.code]);
  assert.deepEqual(r.sent[2], r.sent[0]);
  const stale = fake(new RedisReplyError('ERR Function not found'), new RedisReplyError("ERR Library 'redlimit' already exists"));
  await assert.rejects(lb.fcall(stale, ['k'], lbArgs), FunctionsStaleError);
});

test('manifest problems are refused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'redlimit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'lua'));
  copyFileSync(fileURLToPath(new URL('../../lua/gcra.lua', import.meta.url)), join(dir, 'lua', 'gcra.lua'));
  const load = (mutate = () => {}) => {
    const m = structuredClone(manifest);
    delete m.functions;
    m.scripts = m.scripts.filter((s) => s.name === 'gcra');
    m.scripts[0].file = 'lua/gcra.lua';
    mutate(m);
    writeFileSync(join(dir, 'scripts.json'), JSON.stringify(m));
    return Bundle.load(join(dir, 'scripts.json'));
  };
  assert.deepEqual([...load()].map((s) => s.name), ['gcra']);
  assert.throws(() => load((m) => { m.version = 4; }), ManifestError);
  assert.throws(() => load((m) => { Object.assign(m.scripts[0].args[0], { type: 'record', variadic: true, fields: [{ name: 'a', type: 'int', wire: '' }] }); }), /two fields/);
  assert.throws(() => load((m) => { m.scripts[0].sha1 = '0'.repeat(40); }), /sha1/);
  assert.throws(() => load((m) => { m.scripts[0].args[0].type = 'decimal'; }), /unknown type/);
});

test('variadic keys, arguments and returns', () => {
  const entry = structuredClone(manifest.scripts.find((s) => s.name === 'gcra'));
  entry.file = '../lua/gcra.lua';
  entry.keys = [{ name: 'first' }, { name: 'rest', variadic: true }];
  entry.args = [{ name: 'n', type: 'int', wire: '' }, { name: 'windows', type: 'ms', unit: 'milliseconds', wire: '', variadic: true }];
  entry.returns = [{ name: 'allowed', type: 'bool', wire: '' }, { name: 'wait_each', type: 'ms', unit: 'milliseconds', min: 0, sentinels: [{ name: 'never', value: -1 }], wire: '', variadic: true }];
  const s = new Script(entry, fileURLToPath(new URL('../../bindings', import.meta.url)), null);
  assert.deepEqual(s.encode(['a', 'b', 'c'], { n: 2, windows: [1000, 3_600_000] }), { keys: ['a', 'b', 'c'], argv: ['2', '1000', '3600000'] });
  assert.deepEqual(s.encode(['a'], { n: 2, windows: [] }).argv, ['2']);
  assert.throws(() => s.encode([], { n: 2, windows: [] }), ArgError);
  assert.throws(() => s.encode(['a'], { n: 2, windows: 1000 }), ArgError);
  assert.deepEqual(s.decode([0, 5, -1]), { allowed: false, waitEach: [5, NEVER] });
});

test('records, sentinels, counts and patterns', () => {
  // A script as luagen describes multi.lua-like headers.
  const entry = structuredClone(manifest.scripts.find((s) => s.name === 'gcra'));
  entry.file = '../lua/gcra.lua';
  const ms = { unit: 'milliseconds', wire: '' };
  entry.keys = [{ name: 'keys', variadic: true, min_count: 1, max_count: 2 }];
  entry.args = [
    { name: 'lease', type: 'string', wire: '', pattern: '^[a-z0-9_-]{1,8}$' },
    { name: 'wait', type: 'ms', min: 0, sentinels: [{ name: 'never', value: -1 }], ...ms },
    { name: 'now', type: 'unix_us', unit: 'microseconds', wire: '', min: 1, sentinels: [{ name: 'server_clock', value: 0 }] },
    { name: 'limits', type: 'record', wire: '', variadic: true, min_count: 1, max_count: 2, fields: [
      { name: 'burst', type: 'int', wire: '', min: 1, max: 1e9 },
      { name: 'period', type: 'ms', min: 1, ...ms },
    ] },
  ];
  entry.returns = [
    { name: 'allowed', type: 'bool', wire: '' },
    { name: 'per_limit', type: 'record', wire: '', variadic: true, max_count: 2, fields: [
      { name: 'remaining', type: 'int', wire: '', min: 0 },
      { name: 'retry_after', type: 'ms', min: 0, sentinels: [{ name: 'never', value: -1 }], ...ms },
    ] },
  ];
  const s = new Script(entry, fileURLToPath(new URL('../../bindings', import.meta.url)), null);
  const limits = [{ burst: 3, period: 1000 }, { burst: 5, period: 60000 }];
  assert.deepEqual(s.encode(['{a}1', '{a}2'], { lease: 'ab-1', wait: NEVER, now: null, limits }),
    { keys: ['{a}1', '{a}2'], argv: ['ab-1', '-1', '0', '3', '1000', '5', '60000'] });
  assert.deepEqual(s.encode(['k'], { lease: 'x', wait: sentinel('never'), limits: limits.slice(0, 1) }).argv.slice(0, 2), ['x', '-1']);
  const ok = { lease: 'x', wait: 0, limits: limits.slice(0, 1) };
  for (const [keys, args] of [
    [[], {}], [['a', 'b', 'c'], {}], [['k'], { lease: 'A' }], [['k'], { lease: 'a'.repeat(9) }],
    [['k'], { wait: -2 }], [['k'], { wait: sentinel('later') }], [['k'], { limits: [] }], [['k'], { limits: [...limits, ...limits] }],
    [['k'], { limits: [{ burst: 5e10, period: 1000 }] }], [['k'], { limits: [{ burst: 1 }] }],
    [['k'], { limits: [{ burst: 1, period: 1000, rate: 2 }] }], [['k'], { limits: [[1, 1000]] }],
  ]) {
    assert.throws(() => s.encode(keys, { ...ok, ...args }), ArgError, JSON.stringify([keys, args]));
  }
  assert.deepEqual(s.decode([1, 2, 0, 0, -1]), { allowed: true, perLimit: [{ remaining: 2, retryAfter: 0 }, { remaining: 0, retryAfter: NEVER }] });
  for (const bad of [[1, 2], [1, 2, 0, 0], [1, 0, 0, 0, 0, 0, 0], [1, 2, -2]]) {
    assert.throws(() => s.decode(bad), ReplyError, JSON.stringify(bad));
  }
});

test('a batch of requests and its decisions', () => {
  const gcra = bundle.script('gcra');
  const due = new Date(Date.UTC(2026, 0, 1));
  const head = { burst: 5, rate: 5, period: 1000, take: 'all' };
  assert.deepEqual(gcra.encode(['k'], { ...head, requests: [{ cost: 2 }, { cost: 0, deadline: due }] }).argv,
    ['5', '5', '1000', '0', 'all', '2', '0', '0', '1767225600000000']);
  for (const bad of [[], Array(65).fill({ cost: 1 }), [{ deadline: due }], [{ cost: -1 }]]) {
    assert.throws(() => gcra.encode(['k'], { ...head, requests: bad }), ArgError, JSON.stringify(bad));
  }
  const got = gcra.decode([1, 3, 0, 400, -1, 0, 0, 0]);
  assert.deepEqual(got.decisions.map((d) => d.allowed), [1, sentinel('expired')]);
  assert.equal(got.decisions[0].resetAfter, 400);
  for (const bad of [[], [1, 3, 0], [1, -1, 0, 0], [-2, 0, 0, 0]]) {
    assert.throws(() => gcra.decode(bad), ReplyError, JSON.stringify(bad));
  }
});

test('command-line values by the manifest types', () => {
  const gcra = bundle.script('gcra');
  assert.deepEqual(parseCallArgs(gcra, ['burst=3', 'rate=3', 'period=1h', 'take=all', 'requests=1,0/1700000000123000']),
    { burst: 3, rate: 3, period: 3_600_000, take: 'all', requests: [{ cost: 1 }, { cost: 0, deadline: new Date(1_700_000_000_123) }] });
  assert.throws(() => parseCallArgs(gcra, ['requests=1/0/0']), ArgError);
  assert.throws(() => parseCallArgs(gcra, ['requests=/0']), ArgError);
  assert.deepEqual(parseCallArgs(gcra, ['period=2500']), { period: 2500 }, 'a bare number is in the wire unit');
  assert.deepEqual(parseCallArgs(gcra, ['now=1700000000123000']).now, new Date(1_700_000_000_123));
  assert.equal(parseCallArgs(gcra, ['now=0']).now, null);
  assert.throws(() => parseCallArgs(gcra, ['burst=3s']), ArgError);
  assert.throws(() => parseCallArgs(gcra, ['nope=1']), ArgError);
});
