'use strict';
// The compare view: asks /api/compare to run one limit and one traffic
// pattern through every algorithm (the server decides each request with
// the real scripts on a simulated clock) and draws one lane each on a
// shared time axis. Nothing here decides anything.

const PATTERNS = {
  boundary: 'The boundary attack: the limit\'s worth of requests in the last tenth of a fixed window, as many in the first tenth of the next.',
  burst: 'A burst of twice what the limit lets through at once; later, one as large as it holds.',
  steady: 'Evenly spaced, half again over the rate, for three periods.',
  trickle: 'Half the rate, evenly, for three periods: nobody should deny any of it.',
  replay: 'Tap the button (or press T) as you like, then replay your taps through every algorithm.',
};
const CMP_FIELDS = ['cmp-rate', 'cmp-period', 'cmp-burst', 'cmp-cost'];

const compare = {
  pattern: 'boundary',
  taps: [],
  tapStart: 0,
  result: null,
  asked: 0,   // runs asked for; body.dataset.compared is the last one drawn
  timer: 0,   // a run waiting for the fields to rest
};

function cmpParams() {
  const p = new URLSearchParams();
  for (const f of CMP_FIELDS) p.set(f.slice(4), $(f).value);
  p.set('pattern', compare.pattern);
  if (compare.pattern === 'replay') p.set('times', compare.taps.join(','));
  return p;
}

async function runCompare() {
  const id = ++compare.asked;
  $('cmp-lanes').setAttribute('aria-busy', 'true');
  let resp;
  try {
    resp = await fetch('/api/compare?' + cmpParams(), { cache: 'no-store' });
  } catch (_) {
    if (id !== compare.asked) return;
    $('cmp-lanes').removeAttribute('aria-busy');
    $('cmp-error').textContent = 'The demo server does not answer: is it still running?';
    $('cmp-error').hidden = false;
    return;
  }
  if (id !== compare.asked) return; // a newer run was asked for
  $('cmp-lanes').removeAttribute('aria-busy');
  const e = $('cmp-error');
  if (!resp.ok) {
    e.textContent = await problemDetail(resp);
    e.hidden = false;
    compare.result = null;
    $('cmp-lanes').replaceChildren();
    $('cmp-summary').textContent = '';
    document.body.dataset.compared = String(id);
    return;
  }
  e.hidden = true;
  compare.result = await resp.json();
  drawCompare();
  document.body.dataset.compared = String(id);
}

function drawCompare() {
  const c = compare.result;
  if (!c) return;
  const box = $('cmp-lanes');
  box.replaceChildren();
  box.dataset.start = String(c.start);
  box.dataset.period = String(c.period);
  box.dataset.rate = String(c.rate);
  box.dataset.burst = String(c.burst);
  box.dataset.cost = String(c.cost);
  box.dataset.pattern = c.pattern;
  $('cmp-summary').textContent = `${c.requests} requests of cost ${c.cost} over ${fmtMs(Math.round(c.span / 1000))}, each decided by the real script on ${$('backend').textContent}, on a simulated clock. Dashed lines: window boundaries (every ${fmtMs(c.period / 1000)}).`;
  c.lanes.forEach((l, i) => {
    const lane = document.createElement('div');
    lane.className = 'lane';
    lane.dataset.algorithm = l.algorithm;
    const head = document.createElement('div');
    head.className = 'lane-head';
    const name = document.createElement('strong');
    name.textContent = l.algorithm;
    head.appendChild(name);
    const totals = document.createElement('span');
    totals.className = 'totals';
    const t = l.totals;
    const over = t.maxInPeriod > l.limit;
    const parts = [
      ['admitted', t.admitted, 'admitted'],
      ['denied', t.denied, 'denied'],
      ['never', t.never, 'can never pass'],
      ['maxInPeriod', t.maxInPeriod, 'most in one period'],
    ];
    for (const [k, v, label] of parts) {
      if (k === 'never' && v === 0) continue;
      const s = document.createElement('span');
      s.className = 'total ' + k + (k === 'maxInPeriod' && over ? ' over' : '');
      s.dataset.k = k;
      s.dataset.v = String(v);
      s.textContent = `${label} ${v}` + (k === 'maxInPeriod' ? ` of ${l.limit}` + (over ? ` (${(v / l.limit).toFixed(v % l.limit ? 1 : 0)}×)` : '') : '');
      totals.appendChild(s);
    }
    head.appendChild(totals);
    const left = document.createElement('span');
    left.className = 'left';
    const last = l.capacity[l.capacity.length - 1];
    left.textContent = `left at the end: ${last ? last.remaining : '–'} of ${l.limit}`;
    head.appendChild(left);
    lane.appendChild(head);
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'lane-plot');
    lane.appendChild(svg);
    box.appendChild(lane);
    drawLane(svg, {
      span: c.span, period: c.period, limit: l.limit, capacity: l.capacity,
      marks: l.marks.map((m, j) => ({ ...m, title: markTitle(j, m, c) })),
      axis: i === c.lanes.length - 1, unitsPerSecond: 1e6,
    });
  });
}

function markTitle(i, m, c) {
  const at = fmtSeconds(m.at / 1e6);
  if (m.allowed) return `#${i + 1} at ${at}: allowed, ${m.remaining} left`;
  if (m.never) return `#${i + 1} at ${at}: can never pass (cost ${c.cost} is above what the limit lets through at once)`;
  return `#${i + 1} at ${at}: denied, retry in ${fmtMs(Math.ceil(m.retryAfterUs / 1000))}`;
}

function choosePattern(name) {
  compare.pattern = name;
  for (const b of document.querySelectorAll('#cmp-patterns button')) {
    b.setAttribute('aria-pressed', String(b.dataset.pattern === name));
  }
  $('cmp-pattern-text').textContent = PATTERNS[name];
  $('cmp-replay').hidden = name !== 'replay';
  if (name !== 'replay' || compare.taps.length) runCompare();
}

function tap() {
  const now = performance.now();
  if (!compare.taps.length) compare.tapStart = now;
  compare.taps.push(Math.round(now - compare.tapStart));
  $('tap-count').textContent = `${compare.taps.length} tap${compare.taps.length === 1 ? '' : 's'} over ${fmtMs(compare.taps[compare.taps.length - 1])}`;
}

function initCompare() {
  for (const b of document.querySelectorAll('#cmp-patterns button')) {
    b.addEventListener('click', () => choosePattern(b.dataset.pattern));
  }
  // Typing runs the pattern again once the fields rest for 250 ms.
  for (const f of CMP_FIELDS) {
    $(f).addEventListener('input', () => {
      clearTimeout(compare.timer);
      compare.timer = setTimeout(() => {
        compare.timer = 0;
        if (compare.pattern !== 'replay' || compare.taps.length) runCompare();
      }, 250);
    });
  }
  $('tap').addEventListener('click', tap);
  document.addEventListener('keydown', (e) => {
    if (compare.pattern === 'replay' && (e.key === 't' || e.key === 'T') && !(e.target instanceof HTMLInputElement)) tap();
  });
  $('replay-run').addEventListener('click', runCompare);
  $('replay-clear').addEventListener('click', () => {
    compare.taps = [];
    $('tap-count').textContent = 'no taps yet';
  });
  let width = 0;
  window.addEventListener('resize', () => {
    if ($('cmp-lanes').clientWidth !== width) {
      width = $('cmp-lanes').clientWidth;
      drawCompare();
      drawTwo();
      draw();
    }
  });
  choosePattern(compare.pattern);
}
