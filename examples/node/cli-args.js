// Command-line values (NAME=VALUE) read as the manifest's types, for demo.js.
// Durations are an integer in the argument's wire unit or carry one of the
// suffixes us, ms, s, m, h; instants are an integer in their wire unit, 0 for
// the server's clock. Records are separated by commas, their fields by / in
// the manifest's order, and trailing instants may be left out.

import { ArgError, camel } from './redlimit.js';

const MS_PER = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const WIRE = { microseconds: 'us', milliseconds: 'ms', seconds: 's' };

// Reads one command-line value as the manifest's type for field f.
export function parseValue(f, text) {
  const t = f.type;
  if (t === 'string' || t === 'enum') return text;
  if (t === 'bool') {
    if (text === '1' || text === 'true') return true;
    if (text === '0' || text === 'false') return false;
    throw new ArgError('command line', f.name, `${JSON.stringify(text)} is not 1, 0, true or false`);
  }
  if (t === 'float') return Number(text);
  const m = /^(-?\d+)(us|ms|s|m|h)?$/.exec(text);
  if (!m) throw new ArgError('command line', f.name, `${JSON.stringify(text)} is not an integer`);
  const n = Number(m[1]);
  const suffix = m[2];
  if (t === 'int') {
    if (suffix) throw new ArgError('command line', f.name, `an int takes no unit, got ${JSON.stringify(text)}`);
    return n;
  }
  if (t.startsWith('unix_')) {
    if (suffix) throw new ArgError('command line', f.name, `an instant is an integer in ${f.unit} since the epoch, got ${JSON.stringify(text)}`);
    return n === 0 ? null : new Date(n * MS_PER[WIRE[f.unit]]);
  }
  return n * MS_PER[suffix ?? WIRE[f.unit]];
}

export function parseCallArgs(script, pairs) {
  const fields = new Map(script.args.map((f) => [f.name, f]));
  const args = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 0) throw new ArgError(script.name, pair, 'is not NAME=VALUE');
    const name = pair.slice(0, eq);
    const text = pair.slice(eq + 1);
    const f = fields.get(name);
    if (!f) throw new ArgError(script.name, name, `no such argument; takes ${[...fields.keys()].join(', ')}`);
    const each = text.split(',').filter((v) => v !== '');
    if (f.type === 'record') {
      // Records separated by commas, their fields by / in the manifest's
      // order, trailing instants left out or not: limits=3/3/1h,100/100/1d,
      // requests=1,1,0/1700000000000000.
      args[camel(name)] = each.map((v) => {
        const parts = v.split('/');
        if (parts.length > f.fields.length || f.fields.slice(parts.length).some((sub) => !sub.type.startsWith('unix_'))) {
          throw new ArgError(script.name, name, `${JSON.stringify(v)} is not ${f.fields.map((x) => x.name).join('/')}`);
        }
        return Object.fromEntries(f.fields.slice(0, parts.length).map((sub, i) => [camel(sub.name), parseValue(sub, parts[i])]));
      });
    } else {
      args[camel(name)] = f.variadic ? each.map((v) => parseValue(f, v)) : parseValue(f, text);
    }
  }
  return args;
}
