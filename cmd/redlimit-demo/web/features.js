'use strict';
// The panels of what only redlimit has. Each button calls the demo's API,
// where the real library decides; this file only shows the answers.

async function api(method, path) {
  const resp = await fetch(path, { method, cache: 'no-store' });
  if (!resp.ok && resp.headers.get('Content-Type') !== 'application/problem+json') throw new Error(await resp.text());
  return resp;
}

function div(cls, text, parent) {
  const e = document.createElement('div');
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function busy(id, fn) {
  return async () => {
    const b = $(id);
    b.disabled = true;
    try { await fn(); } finally { b.disabled = false; }
  };
}

// Two limits at once.
let twoResult = null;
async function runTwo() {
  twoResult = await (await api('GET', '/api/two')).json();
  drawTwo();
  document.body.dataset.two = 'done';
}

function drawTwo() {
  const r = twoResult;
  if (!r) return;
  const box = $('two-lanes');
  box.replaceChildren();
  r.strategies.forEach((st, i) => {
    const lane = div('lane', undefined, box);
    lane.dataset.strategy = st.atomic ? 'multi' : 'all';
    const head = div('lane-head', undefined, lane);
    const name = document.createElement('strong');
    name.textContent = st.name;
    head.appendChild(name);
    const t = document.createElement('span');
    t.className = 'totals';
    for (const [k, v, label] of [['admitted', st.admitted, 'admitted'], ['denied', st.denied, 'denied'],
      ['wasted', st.wasted[0] + st.wasted[1], `quota wasted on denied requests: ${st.wasted[0]} per second, ${st.wasted[1]} per 10 s`]]) {
      const s = document.createElement('span');
      s.className = 'total ' + k + (k === 'wasted' && v > 0 ? ' over' : '');
      s.dataset.k = k;
      s.dataset.v = String(v);
      s.textContent = k === 'wasted' ? label : `${label} ${v}`;
      t.appendChild(s);
    }
    head.appendChild(t);
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'lane-plot');
    lane.appendChild(svg);
    drawLane(svg, {
      span: r.span, period: 1e6, limit: st.longLimit, capacity: st.capacity, capacityHeight: 16,
      marks: st.marks.map((m, j) => ({ ...m, title: `#${j + 1} at ${fmtSeconds(m.at / 1e6)}: ${m.allowed ? 'allowed' : 'denied'}` })),
      axis: i === r.strategies.length - 1, unitsPerSecond: 1e6,
    });
  });
  div('muted', 'The band over each lane: what is left of the 20 per 10 s. All spends it on requests the per-second limit denies, so later ones find it empty.', box);
}

// A tier switch.
let tierPlan = 'free';
let tierSeq = 0;
async function tierRequest(key) {
  const resp = await api('GET', '/api/tier?key=' + encodeURIComponent(key));
  let detail = '';
  if (resp.status !== 200) {
    try { detail = (await resp.json()).detail || ''; } catch (_) { /* no body */ }
  } else {
    await resp.text();
  }
  const li = document.createElement('li');
  li.dataset.status = String(resp.status);
  const who = key === 'alice-key' ? `alice (${tierPlan})` : key;
  li.textContent = `${who}: ${resp.status} ${resp.status === 200 ? 'allowed' : resp.status === 429 ? 'denied' : 'refused'} `;
  const code = document.createElement('code');
  code.textContent = resp.headers.get('RateLimit') || detail;
  li.appendChild(code);
  li.dataset.seq = String(++tierSeq);
  $('tier-log').prepend(li);
}

async function tierSwitch() {
  const next = tierPlan === 'free' ? 'pro' : 'free';
  const r = await (await api('POST', '/api/tier?plan=' + next)).json();
  tierPlan = r.plan;
  $('tier-switch').textContent = tierPlan === 'free' ? 'Upgrade to pro' : 'Back to free';
  const li = document.createElement('li');
  li.className = 'note';
  li.textContent = `alice is on ${tierPlan} now`;
  $('tier-log').prepend(li);
}

// The deny cache.
function showCache(r) {
  const body = $('cache-table').tBodies[0];
  body.replaceChildren();
  for (const s of r.sides) {
    const tr = document.createElement('tr');
    tr.dataset.cached = String(s.name !== 'without a deny cache');
    for (const v of [s.name, s.decisions, s.allowed, s.cached, s.roundTrips]) {
      const td = document.createElement('td');
      td.textContent = String(v);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  const [plain, cached] = r.sides;
  $('cache-saved').textContent = plain.decisions
    ? `Round trips saved: ${plain.roundTrips - cached.roundTrips} of ${plain.roundTrips}, for the same ${cached.allowed} allowed.` : '';
}

async function hammer() {
  for (let i = 0; i < 5; i++) showCache(await (await api('POST', '/api/denycache?n=20')).json());
}

// Redis down.
function showOutage(r) {
  $('outage-down').checked = r.down;
  const box = $('outage-lanes');
  box.replaceChildren();
  for (const l of r.lanes) {
    const p = div('policy', undefined, box);
    p.dataset.policy = l.name;
    const head = div('', undefined, p);
    const b = document.createElement('strong');
    b.textContent = l.name;
    head.append(b, ' — ' + l.about);
    const answers = div('answers', undefined, p);
    for (const a of (r.answers || {})[l.name] || []) {
      const s = document.createElement('span');
      s.className = 'answer s' + a.status;
      s.textContent = String(a.status);
      if (a.title) s.title = a.title;
      answers.appendChild(s);
    }
  }
}

// Leases in flight.
let leaseTimer = 0;
function showLeases(r) {
  const box = $('lease-slots');
  box.replaceChildren();
  const now = Date.parse(r.now);
  for (let i = 0; i < r.cap; i++) {
    const j = r.jobs[i];
    const slot = div('slot', undefined, box);
    if (!j) {
      slot.textContent = 'free';
      continue;
    }
    const left = Math.max(0, Date.parse(j.ends) - now);
    slot.classList.add('held');
    if (j.crashed) slot.classList.add('crashed');
    slot.dataset.id = j.id;
    slot.textContent = `job ${j.id}: ` + (j.crashed ? `crashed; lease expires in ${fmtMs(Math.ceil(left / 100) * 100)}` : `releases in ${fmtMs(Math.ceil(left / 100) * 100)}`);
    const total = Date.parse(j.ends) - Date.parse(j.started);
    const bar = div('bar', undefined, slot);
    bar.style.width = (100 * left / Math.max(1, total)) + '%';
  }
  $('lease-last').textContent = r.last ? 'Last acquire: ' + r.last + '.' : '';
  clearTimeout(leaseTimer);
  if (r.jobs.length) leaseTimer = setTimeout(pollLeases, 500);
}

async function pollLeases() {
  try { showLeases(await (await api('GET', '/api/leases')).json()); } catch (_) { /* the server is gone */ }
}

function initFeatures() {
  $('two-run').addEventListener('click', busy('two-run', runTwo));
  $('tier-send').addEventListener('click', busy('tier-send', () => tierRequest('alice-key')));
  $('tier-unknown').addEventListener('click', busy('tier-unknown', () => tierRequest('mallory-key')));
  $('tier-switch').addEventListener('click', busy('tier-switch', tierSwitch));
  $('cache-hammer').addEventListener('click', busy('cache-hammer', hammer));
  $('cache-reset').addEventListener('click', busy('cache-reset', async () => showCache(await (await api('POST', '/api/denycache?reset=1')).json())));
  $('outage-down').addEventListener('change', async () => showOutage(await (await api('POST', '/api/outage?down=' + ($('outage-down').checked ? 1 : 0))).json()));
  $('outage-send').addEventListener('click', busy('outage-send', async () => showOutage(await (await api('POST', '/api/outage?send=5')).json())));
  $('outage-reset').addEventListener('click', busy('outage-reset', async () => showOutage(await (await api('POST', '/api/outage?reset=1')).json())));
  $('lease-job').addEventListener('click', busy('lease-job', async () => showLeases(await (await api('POST', '/api/leases?start=job')).json())));
  $('lease-crash').addEventListener('click', busy('lease-crash', async () => showLeases(await (await api('POST', '/api/leases?start=crash')).json())));
  pollLeases();
  api('GET', '/api/outage').then((r) => r.json()).then(showOutage).catch(() => {});
  api('GET', '/api/denycache').then((r) => r.json()).then(showCache).catch(() => {});
}
