'use strict';
// The demo page's live view: sends real requests to /api/limited, shows
// what the ratelimit middleware answered, and polls /api/peek (which counts
// nothing) to chart the capacity left. No libraries: lanes.js draws SVG;
// compare.js is the compare view.

const $ = (id) => document.getElementById(id);
const HEADERS = ['RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'];
const CHART_MS = 30000;
const FIELDS = ['algorithm', 'rate', 'period', 'burst', 'client', 'cost'];
const DESCRIPTIONS = {
  gcra: 'GCRA (the default): Burst requests at once, then one every Period/Rate. One integer of state per key.',
  token_bucket: 'Token bucket, smooth refill: holds Burst tokens and gains Rate tokens per Period as time passes.',
  token_bucket_interval: 'Token bucket, interval refill: holds Burst tokens and gains Rate tokens at once after each whole Period.',
  leaky_bucket: 'Leaky bucket as a meter: holds Burst, drains Rate per Period, denies at once (never queues).',
  fixed_window: 'Fixed window: Rate per Period, in windows aligned to the clock; up to twice Rate can pass around a boundary.',
  sliding_window_log: 'Sliding window log: exactly Rate in any Period, one entry per request (Rate up to 10 000).',
  sliding_window_counter: 'Sliding window counter: Rate per rolling Period, estimated from this and the last window\'s counts.',
};

let algorithms = [];
let seq = 0;
let samples = [];    // {t, remaining, limit} from /api/peek
let decisions = [];  // {t, allowed, remaining} from /api/limited
let settingsKey = '';
let errorFrom = '';  // 'settings' (the server refused them) or 'n' (the burst size)

function params() {
  const p = new URLSearchParams();
  for (const f of FIELDS) p.set(f, $(f).value);
  return p;
}

function windowed() {
  const a = algorithms.find((a) => a.name === $('algorithm').value);
  return a ? a.windowed : false;
}

function syncForm() {
  const w = windowed();
  $('burst').disabled = w;
  if (w) $('burst').value = $('rate').value;
  $('burst-note').textContent = w ? 'a window admits Rate per Period' : 'requests at once';
  $('description').textContent = DESCRIPTIONS[$('algorithm').value] || '';
  const key = params().toString();
  if (key !== settingsKey) {  // new settings: a new limiter, a fresh chart
    settingsKey = key;
    samples = [];
    decisions = [];
    showNever('');
    draw();
  }
}

function showError(msg, from) {
  const e = $('error');
  if (msg) {
    e.textContent = msg;
    e.hidden = false;
    errorFrom = from;
  } else if (!from || errorFrom === from) {
    e.textContent = '';
    e.hidden = true;
    errorFrom = '';
  }
}

async function problemDetail(resp) {
  try {
    const p = await resp.json();
    return p.detail || p.title || resp.statusText;
  } catch (_) {
    return resp.status + ' ' + resp.statusText;
  }
}

function fmtMs(ms) {
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(ms % 1000 ? 1 : 0) + ' s';
  return Math.round(ms / 60000) + ' min';
}

function fmtTime(d) {
  return d.toTimeString().slice(0, 8) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// clearCapacity forgets what the page showed of a limiter whose settings
// are no longer valid.
function clearCapacity() {
  for (const id of ['remaining', 'limit', 'reset-after', 'redis-key']) $(id).textContent = '–';
  $('meter-fill').style.width = '0';
  showNever('');
}

// send makes one limited request and logs it; false on bad input.
async function send() {
  syncForm();
  const resp = await fetch('/api/limited?' + params(), { cache: 'no-store' });
  if (resp.status === 400) {
    showError(await problemDetail(resp), 'settings');
    clearCapacity();
    return false;
  }
  showError('');
  const headers = {};
  for (const h of HEADERS) {
    const v = resp.headers.get(h);
    if (v !== null) headers[h] = v;
  }
  await resp.text();
  const now = new Date();
  const left = headers['X-RateLimit-Remaining'];
  // A 429 without Retry-After can never pass: the middleware leaves the
  // field out when waiting would not help (the body says so too).
  const never = resp.status === 429 && !('Retry-After' in headers);
  decisions.push({ t: now.getTime(), seq: seq + 1, allowed: resp.status === 200, never, remaining: left === undefined ? null : Number(left) });
  addRow(now, resp, headers, never);
  showNever(never ? `A request of cost ${$('cost').value} can never pass: this limit lets at most ${headers['X-RateLimit-Limit']} through at once, so waiting would not help.` : '');
  draw();
  return true;
}

function showNever(msg) {
  $('never').textContent = msg;
  $('never').hidden = !msg;
}

function addRow(now, resp, headers, never) {
  const tr = document.createElement('tr');
  seq++;
  tr.dataset.seq = String(seq);
  tr.dataset.status = String(resp.status);
  tr.dataset.never = String(never);
  tr.dataset.retryAfter = headers['Retry-After'] || '';
  tr.dataset.remaining = headers['X-RateLimit-Remaining'] || '';
  const cells = [
    ['seq', String(seq)],
    ['time', fmtTime(now)],
    ['status', resp.status + ' ' + (resp.status === 200 ? 'allowed' : never ? 'can never pass' : resp.status === 429 ? 'denied' : resp.statusText)],
    ['remaining', headers['X-RateLimit-Remaining'] || '–'],
  ];
  for (const [cls, text] of cells) {
    const td = document.createElement('td');
    td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
  }
  const td = document.createElement('td');
  td.className = 'headers';
  const code = document.createElement('code');
  code.textContent = Object.entries(headers).map(([k, v]) => k + ': ' + v).join('\n');
  td.appendChild(code);
  tr.appendChild(td);
  const body = $('log').tBodies[0];
  body.insertBefore(tr, body.firstChild);
  while (body.rows.length > 100) body.deleteRow(body.rows.length - 1);
}

async function withButtons(fn) {
  const buttons = document.querySelectorAll('button');
  buttons.forEach((b) => { b.disabled = true; });
  try {
    await fn();
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
}

async function sendBurst() {
  const n = Number($('n').value);
  if (!Number.isInteger(n) || n < 1 || n > 100) {
    showError('Burst size: a whole number from 1 to 100.', 'n');
    return;
  }
  for (let i = 0; i < n; i++) {
    if (!(await send())) return;
  }
}

async function reset() {
  syncForm();
  const resp = await fetch('/api/reset?' + params(), { method: 'POST' });
  if (resp.status === 400) showError(await problemDetail(resp), 'settings');
}

// poll charts the capacity left, four times a second.
async function poll() {
  try {
    syncForm();
    const asked = settingsKey;
    const resp = await fetch('/api/peek?' + params(), { cache: 'no-store' });
    if (asked !== settingsKey) return;  // the settings changed meanwhile
    if (resp.status === 400) {
      showError(await problemDetail(resp), 'settings');
      clearCapacity();
      return;
    }
    if (!resp.ok) return;
    showError('', 'settings');  // the settings are good now
    const s = await resp.json();
    if (asked !== settingsKey) return;
    samples.push({ t: Date.now(), remaining: s.remaining, limit: s.limit });
    const cut = Date.now() - CHART_MS - 1000;
    samples = samples.filter((x) => x.t >= cut);
    decisions = decisions.filter((x) => x.t >= cut);
    $('remaining').textContent = s.remaining;
    $('limit').textContent = s.limit;
    $('reset-after').textContent = fmtMs(s.resetAfterMs);
    $('redis-key').textContent = s.redisKey;
    $('meter-fill').style.width = (100 * s.remaining / Math.max(1, s.limit)) + '%';
    draw();
  } catch (_) {
    // the server is gone; keep trying
  } finally {
    setTimeout(poll, 250);
  }
}

// draw charts the last 30 s: polled capacity over the decisions, which
// never hide each other (lanes.js).
function draw() {
  const now = Date.now();
  const from = now - CHART_MS;
  const limit = samples.length ? samples[samples.length - 1].limit : Math.max(1, ...decisions.map((d) => d.remaining || 0));
  const marks = decisions.filter((d) => d.t >= from).map((d) => ({
    at: d.t - from, allowed: d.allowed, never: d.never,
    title: `#${d.seq}: ` + (d.allowed ? `allowed, ${d.remaining} left` : d.never ? 'can never pass' : 'denied'),
  }));
  drawLane($('chart'), {
    span: CHART_MS, period: 0, limit, capacityHeight: 110, bandHeight: 44,
    capacity: samples.filter((p) => p.t >= from).map((p) => ({ at: p.t - from, remaining: p.remaining })),
    marks, axis: true, unitsPerSecond: 1000,
    tickLabel: (s) => (s >= 30 ? 'now' : '-' + (30 - s) + ' s'),
  });
}

async function init() {
  const info = await (await fetch('/api/info')).json();
  $('backend').textContent = info.backend;
  algorithms = info.algorithms;
  for (const a of algorithms) {
    const o = document.createElement('option');
    o.value = o.textContent = a.name;
    $('algorithm').appendChild(o);
  }
  for (const f of FIELDS) $(f).addEventListener('input', syncForm);
  $('send-one').addEventListener('click', () => withButtons(send));
  $('send-burst').addEventListener('click', () => withButtons(sendBurst));
  $('reset').addEventListener('click', () => withButtons(reset));
  syncForm();
  initCompare();
  initFeatures();
  document.body.dataset.ready = 'true';
  poll();
}

init();
