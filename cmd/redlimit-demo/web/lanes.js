'use strict';
// Drawing one lane: a capacity band over a band of decision marks, on a
// time axis, in SVG. Marks never hide each other: each takes the lowest
// row that is free at its instant, and when every row is taken there it
// moves right to the first free place (so a burst at one instant reads as
// a block, oldest first, column by column). When that pushes marks far
// from their instant, they shrink and the rows grow in number.

const SVG = 'http://www.w3.org/2000/svg';

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

// pack places marks (sorted by x) in rows of a band `height` px tall, as
// squares of `size` px `gap` px apart. Returns [{x, row}] and the largest
// distance a mark moved right.
function pack(xs, size, gap, rows) {
  const ends = new Array(rows).fill(-Infinity);
  const out = [];
  let moved = 0;
  for (const want of xs) {
    let x = want - size / 2;
    let row = ends.findIndex((e) => e + gap <= x);
    if (row < 0) {
      row = ends.indexOf(Math.min(...ends));
      x = ends[row] + gap;
    }
    ends[row] = x + size;
    moved = Math.max(moved, x - (want - size / 2));
    out.push({ x, row });
  }
  return { placed: out, moved };
}

// drawLane renders into svg (emptied first):
//   span      the time the axis covers (any unit; at, period alike)
//   marks     [{at, allowed, never, title}], in time order
//   capacity  [{at, remaining}] (a step line), limit its full value
//   period    dashed lines at every multiple (window boundaries), or 0
//   axis      true to label the time axis under the marks (seconds, at
//             unitsPerSecond)
// It sets svg's height, and returns the marks' elements.
function drawLane(svg, o) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const W = svg.clientWidth || svg.parentNode.clientWidth || 600;
  const pad = { l: 6, r: 6 };
  const capH = o.capacityHeight || 22;
  const bandH = o.bandHeight || 30;
  const axisH = o.axis ? 16 : 0;
  const x = (at) => pad.l + (W - pad.l - pad.r) * Math.min(1, Math.max(0, at / o.span));

  // Try big marks first; shrink while a burst would push them far.
  let size = 8, gap = 2, layout;
  for (const [s, g] of [[8, 2], [6, 1], [4, 1], [3, 1]]) {
    size = s; gap = g;
    layout = pack(o.marks.map((m) => x(m.at)), size, gap, Math.floor(bandH / (size + gap)));
    const last = layout.placed.reduce((a, p) => Math.max(a, p.x + size), 0);
    if (layout.moved <= 3 * size && last <= W - 1) break;
  }
  const rowsH = Math.floor(bandH / (size + gap)) * (size + gap);
  const H = capH + 4 + rowsH + axisH;
  svg.setAttribute('height', String(H));
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);

  // Window boundaries.
  if (o.period > 0) {
    for (let t = o.period; t < o.span; t += o.period) {
      el('line', { x1: x(t), x2: x(t), y1: 0, y2: capH + 4 + rowsH, class: 'boundary' }, svg);
    }
  }
  // Capacity: a step area, full height = limit.
  el('rect', { x: pad.l, y: 0, width: W - pad.l - pad.r, height: capH, class: 'cap-bg' }, svg);
  if (o.capacity.length) {
    const y = (v) => capH - capH * Math.min(1, v / Math.max(1, o.limit));
    let d = `M${x(o.capacity[0].at)},${capH} L${x(o.capacity[0].at)},${y(o.capacity[0].remaining)}`;
    for (let i = 1; i < o.capacity.length; i++) {
      d += ` L${x(o.capacity[i].at)},${y(o.capacity[i - 1].remaining)} L${x(o.capacity[i].at)},${y(o.capacity[i].remaining)}`;
    }
    const lastAt = x(o.capacity[o.capacity.length - 1].at);
    el('path', { d: d + ` L${lastAt},${capH} Z`, class: 'cap-area' }, svg);
  }
  // Marks.
  const els = [];
  const top = capH + 4;
  layout.placed.forEach((p, i) => {
    const m = o.marks[i];
    const kind = m.allowed ? 'allowed' : m.never ? 'never' : 'denied';
    const r = el('rect', {
      x: p.x.toFixed(2), y: top + rowsH - (p.row + 1) * (size + gap) + gap / 2, width: size, height: size, rx: size > 4 ? 1.5 : 0,
      class: 'mark ' + kind,
    }, svg);
    r.dataset.i = String(i);
    r.dataset.at = String(m.at);
    if (m.title) el('title', {}, r).textContent = m.title;
    els.push(r);
  });
  if (o.axis) {
    const y = capH + 4 + rowsH + 12;
    const perTick = niceStep(o.span / o.unitsPerSecond, W / 70);
    for (let s = 0; s * o.unitsPerSecond <= o.span + 1e-9; s += perTick) {
      const at = s * o.unitsPerSecond;
      const anchor = at === 0 ? 'start' : at + perTick * o.unitsPerSecond > o.span + 1e-9 ? 'end' : 'middle';
      const t = el('text', { x: x(at), y, class: 'tick', 'text-anchor': anchor }, svg);
      t.textContent = o.tickLabel ? o.tickLabel(s) : fmtSeconds(s);
    }
  }
  return els;
}

// niceStep is a tick spacing in seconds (1, 2 or 5 × a power of ten) that
// puts at most `ticks` ticks on `seconds`.
function niceStep(seconds, ticks) {
  const raw = seconds / Math.max(1, Math.floor(ticks));
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function fmtSeconds(s) {
  return (Math.round(s * 1000) / 1000) + ' s';
}
