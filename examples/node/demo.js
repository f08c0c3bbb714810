// Decides with redlimit's scripts from the command line, through redlimit.js.
//
//   node examples/node/demo.js                  # gcra and token_bucket, 5 calls each
//   node examples/node/demo.js --via fcall      # the same through the Functions library
//   node examples/node/demo.js --calls 5 --json gcra 'rl:{alice}' burst=3 rate=3 period=1h take=all requests=1
//
// A SCRIPT KEY NAME=VALUE... call names its script, keys (comma-separated)
// and arguments as the manifest does. Durations are an integer in the
// argument's wire unit (the manifest's unit) or carry one of the suffixes us,
// ms, s, m, h; instants are an integer in their wire unit, 0 for the
// server's clock. Records are separated by commas, their fields by / in the
// manifest's order, and trailing instants may be left out: requests=1,1,0
// is three requests of gcra.lua (costs 1, 1 and a peek, no deadlines).
//
// Exit status: 0 when every call got a decision, 1 on an error reply or a
// Redis error, 2 when an argument is refused before anything is sent.

import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { ArgError, Bundle, NEVER, RedlimitError, ScriptError, camel } from './redlimit.js';
import { parseCallArgs } from './cli-args.js';

const MANIFEST = new URL('../../bindings/scripts.json', import.meta.url);

// The demo without arguments: two algorithms, each 3 per hour, 5 calls.
const DEMO = [
  ['gcra', ['burst=3', 'rate=3', 'period=1h', 'take=all', 'requests=1']],
  ['token_bucket', ['capacity=3', 'rate=3', 'period=1h', 'refill=smooth', 'requests=1']],
];

// A reply value as JSON, named as the manifest names it (a record's fields
// back in snake_case, as the Python example prints them).
function toJSON(v) {
  if (v === NEVER) return 'never';
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(toJSON);
  if (v !== null && typeof v === 'object' && 'sentinel' in v) return v.sentinel;
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), toJSON(x)]));
  }
  return v;
}

// A reply value as text; a record is its fields, NAME=VALUE.
function toText(v) {
  if (v === NEVER) return 'never';
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return `[${v.map(toText).join(', ')}]`;
  if (v !== null && typeof v === 'object' && 'sentinel' in v) return v.sentinel;
  if (v !== null && typeof v === 'object') {
    return Object.entries(v).map(([k, x]) => `${k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}=${toText(x)}`).join(' ');
  }
  return String(v);
}

function fail(opts, call, kind, message, status) {
  if (opts.json) console.log(JSON.stringify({ call, error: kind, message }));
  console.error(`call ${call}: ${kind}: ${message}`);
  return status;
}

// Runs calls of one script; returns the exit status.
async function decide(redis, script, keys, args, opts) {
  for (let i = 1; i <= opts.calls; i++) {
    let reply;
    try {
      reply = opts.via === 'fcall' ? await script.fcall(redis, keys, args) : await script.run(redis, keys, args);
    } catch (e) {
      if (e instanceof ArgError) return fail(opts, i, 'ArgError', e.message, 2);
      if (e instanceof ScriptError) return fail(opts, i, e.code, e.detail, 1);
      return fail(opts, i, e.name ?? 'Error', e.message, 1);
    }
    if (opts.json) {
      const line = { script: script.name, via: opts.via, call: i };
      for (const r of script.returns) line[r.name] = toJSON(reply[camel(r.name)]);
      console.log(JSON.stringify(line));
    } else {
      console.log(`${script.name.padEnd(14)} call ${i}: ${script.returns.map((r) => `${r.name}=${toText(reply[camel(r.name)])}`).join(' ')}`);
    }
  }
  return 0;
}

async function main(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      manifest: { type: 'string' },
      redis: { type: 'string', default: '127.0.0.1:6379' },
      via: { type: 'string', default: 'evalsha' },
      'load-functions': { type: 'boolean', default: false },
      calls: { type: 'string', default: '5' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log('usage: node demo.js [--manifest PATH] [--redis HOST:PORT] [--via evalsha|fcall] [--load-functions] [--calls N] [--json] [SCRIPT KEY[,KEY...] [NAME=VALUE ...]]');
    return 0;
  }
  const opts = { via: values.via, calls: Number(values.calls), json: values.json };
  if (!['evalsha', 'fcall'].includes(opts.via) || !Number.isSafeInteger(opts.calls) || opts.calls < 1) {
    console.error('--via is evalsha or fcall, --calls a positive integer');
    return 2;
  }
  let bundle;
  try {
    bundle = Bundle.load(values.manifest ?? MANIFEST);
  } catch (e) {
    console.error(`${values.manifest ?? MANIFEST}: ${e.message}`);
    return 2;
  }
  const [script, key, ...pairs] = positionals;
  let calls;
  try {
    if (script === undefined) {
      calls = DEMO.map(([name, p]) => [bundle.script(name), [`redlimit-example:{node-${process.pid}}:${name}`], parseCallArgs(bundle.script(name), p)]);
    } else {
      if (!bundle.has(script)) throw new ArgError(script, 'script', `not in the manifest; it has ${[...bundle].map((s) => s.name).join(', ')}`);
      calls = [[bundle.script(script), key ? key.split(',') : [], parseCallArgs(bundle.script(script), pairs)]];
    }
  } catch (e) {
    if (e instanceof RedlimitError) return fail(opts, 0, 'ArgError', e.message, 2);
    throw e;
  }

  const i = values.redis.lastIndexOf(':');
  // No reconnecting and no offline queue: a demo that cannot reach Redis
  // says so at once instead of waiting for it.
  const redis = new Redis({
    host: values.redis.slice(0, i) || '127.0.0.1',
    port: Number(values.redis.slice(i + 1)),
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let lost; // ioredis reports why a connection failed as an event
  redis.on('error', (e) => { lost = e; });
  try {
    await redis.connect();
    if (values['load-functions']) await bundle.loadFunctions(redis);
    for (const [s, keys, args] of calls) {
      const status = await decide(redis, s, keys, args, opts);
      if (status !== 0) return status;
    }
    return 0;
  } catch (e) {
    console.error(`redis ${values.redis}: ${lost && lost !== e ? `${lost.message} (${e.message})` : e.message}`);
    return 1;
  } finally {
    redis.disconnect();
  }
}

process.exitCode = await main(process.argv.slice(2));
