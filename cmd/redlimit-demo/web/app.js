'use strict';
// The demo page: sends real requests to /api/limited, shows what the
// ratelimit middleware answered, and polls /api/peek (which counts nothing)
// to chart the capacity left. No libraries: the chart is a canvas.

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

// send makes one limited request and logs it; false on bad input.
async function send() {
  syncForm();
  const resp = await fetch('/api/limited?' + params(), { cache: 'no-store' });
  if (resp.status === 400) {
    showError(await problemDetail(resp), 'settings');
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
  decisions.push({ t: now.getTime(), allowed: resp.status === 200, remaining: left === undefined ? null : Number(left) });
  addRow(now, resp, headers);
  draw();
  return true;
}

function addRow(now, resp, headers) {
  const tr = document.createElement('tr');
  seq++;
  tr.dataset.seq = String(seq);
  tr.dataset.status = String(resp.status);
  tr.dataset.retryAfter = headers['Retry-After'] || '';
  tr.dataset.remaining = headers['X-RateLimit-Remaining'] || '';
  const cells = [
    ['seq', String(seq)],
    ['time', fmtTime(now)],
    ['status', resp.status + ' ' + (resp.status === 200 ? 'allowed' : resp.status === 429 ? 'denied' : resp.statusText)],
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
      $('remaining').textContent = $('limit').textContent = $('reset-after').textContent = '–';
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

function draw() {
  const canvas = $('chart');
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 960;
  const h = canvas.clientHeight || 260;
  if (canvas.width !== Math.round(w * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const m = { l: 44, r: 12, t: 10, b: 24 };
  const now = Date.now();
  const limit = samples.length ? samples[samples.length - 1].limit : Math.max(1, ...decisions.map((d) => d.remaining || 0));
  const x = (t) => m.l + (w - m.l - m.r) * (1 - (now - t) / CHART_MS);
  const y = (v) => h - m.b - (h - m.t - m.b) * (v / Math.max(1, limit));

  g.font = '11px system-ui, sans-serif';
  g.strokeStyle = '#e5e7eb';
  g.fillStyle = '#6b7280';
  g.lineWidth = 1;
  for (const v of [0, limit / 2, limit]) {
    g.beginPath();
    g.moveTo(m.l, y(v));
    g.lineTo(w - m.r, y(v));
    g.stroke();
    g.fillText(Number.isInteger(v) ? String(v) : v.toFixed(1), 6, y(v) + 4);
  }
  for (let s = 0; s <= 30; s += 5) {
    const tx = x(now - s * 1000);
    g.fillText(s === 0 ? 'now' : '-' + s + ' s', tx - 12, h - 6);
  }

  // Remaining capacity: a step line through the polled samples.
  const pts = samples.filter((p) => now - p.t <= CHART_MS);
  if (pts.length) {
    g.strokeStyle = '#2563eb';
    g.lineWidth = 2;
    g.beginPath();
    g.moveTo(x(pts[0].t), y(pts[0].remaining));
    for (let i = 1; i < pts.length; i++) {
      g.lineTo(x(pts[i].t), y(pts[i - 1].remaining));
      g.lineTo(x(pts[i].t), y(pts[i].remaining));
    }
    g.stroke();
  }
  // Decisions: green allowed, red denied, at the capacity they left.
  for (const d of decisions) {
    if (now - d.t > CHART_MS) continue;
    g.fillStyle = d.allowed ? '#16a34a' : '#dc2626';
    g.beginPath();
    g.arc(x(d.t), y(d.remaining === null ? 0 : d.remaining), 5, 0, 2 * Math.PI);
    g.fill();
  }
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
  document.body.dataset.ready = 'true';
  poll();
}

init();
