// about:performance: polls perfmond's /api/state (token in the
// Authorization header) and draws the processes, their top groups (share
// of CPU and blocked time over the last interval, sparkline, exceedance
// histogram), the hangs with their symbolized stacks, and each process's
// hangs merged by function as a flame graph. perfmond computes the shares,
// keeps the sparkline points and names the frames; the page only draws.
// No network beyond this server; the CSP forbids anything else.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';
const INTERVAL_MS = 2000;
const SPARK_POINTS = 60;
const GROUP_SPARK_POINTS = 30;
// Rows drawn at first: the busiest processes (perfmond sends them all).
const FIRST_ROWS = 50;
const HIST_LABELS = ['1', '2', '4', '8', '16', '32', '64', '128', '256', '512'];
const FLAME_ROW = 16;
const FLAME_MAX_DEPTH = 64;
const SVG = 'http://www.w3.org/2000/svg';
// #all in the URL: every process from the start.
let showAll = location.hash === '#all';
const drawnFlames = new Map();  // pid -> the flame's JSON last drawn
const openHangs = new Set();    // ids of the hangs whose stack the user opened

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {}))
    node.setAttribute(k, v);
  for (const child of children)
    node.append(child);
  return node;
}

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {}))
    node.setAttribute(k, v);
  return node;
}

function percent(x) {
  return isFinite(x) ? (100 * x).toFixed(1) + ' %' : '–';
}

// The table is drawn as one HTML string, parsed once: thousands of
// createElement() calls a refresh were what made 200 processes slow.
// Everything that comes from a monitored process goes through esc().
function esc(text) {
  return String(text).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c]);
}

// Points in 1/1000 of the interval, oldest first; the newest on the right.
function sparkline(points, size, cls) {
  let line = '';
  if (points.length) {
    const max = Math.max(50, ...points);
    const start = size - points.length;
    line = `<polyline points="${points.map((v, i) => `${start + i},${(23 - 22 * v / max).toFixed(1)}`).join(' ')}"/>`;
  }
  return `<svg class="${cls}" viewBox="0 0 ${size} 24" preserveAspectRatio="none">${line}</svg>`;
}

// Iterations over 1, 2, 4 … 512 ms: one bar each, on a log scale (one
// path: cheap to draw by the thousand).
function histogram(durations) {
  const max = Math.log1p(Math.max(1, ...durations));
  let d = '';
  durations.forEach((n, i) => {
    if (n > 0) {
      const h = Math.max(1, 22 * Math.log1p(n) / max);
      d += `M${i * 5 + 0.5},24v${(-h).toFixed(1)}h4v${h.toFixed(1)}z`;
    }
  });
  const title = 'iterations over ' + durations.map((n, i) => `${HIST_LABELS[i]} ms: ${Number(n)}`).join(', ');
  return `<svg class="hist" viewBox="0 0 50 24" preserveAspectRatio="none"><path d="${d}"/><title>${title}</title></svg>`;
}

function groupItem(g, interval) {
  const cpu = interval > 0 && g.recent_cpu !== undefined ? g.recent_cpu / interval : NaN;
  const blocked = interval > 0 && g.recent_blocked !== undefined ? g.recent_blocked / interval : NaN;
  // An add-on's code outside its compartments: estimated by sampling,
  // shown apart from the exact CPU column.
  const sampled = interval > 0 && g.recent_sampled_cpu !== undefined
    ? ` <span class="sampled" title="CPU estimated by sampling the JavaScript stack of long dispatches ` +
      `(promise jobs, virtual functions …), not measured exactly">+${percent(g.recent_sampled_cpu / interval)} sampled</span>`
    : '';
  return `<li data-group="${Number(g.id)}"><span class="kind">${esc(g.kind)}</span>` +
         `<span class="name" title="${esc(g.name)}">${esc(g.name)}${sampled}</span>` +
         sparkline(g.spark || [], GROUP_SPARK_POINTS, 'spark small') +
         `<span class="num">${percent(cpu)}</span><span class="num">${percent(blocked)}</span>` +
         histogram(g.durations || []) + '</li>';
}

function share(p) {
  return p.interval > 0 ? p.recent_cpu / p.interval : NaN;
}

function drawProcesses(state) {
  const tbody = document.querySelector('#processes tbody');
  const processes = state.processes.slice().sort((a, b) => (share(b) || 0) - (share(a) || 0));
  const shown = showAll ? processes : processes.slice(0, FIRST_ROWS);
  const rows = shown.map(p => {
    const interval = p.interval || 0;
    let list = p.groups.map(g => groupItem(g, interval)).join('');
    if (p.others) {
      const cpu = interval > 0 && p.others.recent_cpu !== undefined ? p.others.recent_cpu / interval : NaN;
      list += `<li class="others"><span class="kind"></span><span class="name">${Number(p.others.n)} other groups</span>` +
              `<span></span><span class="num">${percent(cpu)}</span><span></span><span></span></li>`;
    }
    const pid = Number(p.pid);
    const trace = p.trace ? `<br><a class="trace" href="/api/trace?pid=${pid}&amp;token=${esc(token)}" ` +
                            `download="perfmon-tasks-${pid}.json">task trace</a>` : '';
    return `<tr data-pid="${pid}"><td>${esc(p.name)} <span class="pid">pid ${pid}</span>${trace}</td>` +
           `<td class="num">${percent(share(p))}</td><td>${sparkline(p.spark || [], SPARK_POINTS, 'spark')}</td>` +
           `<td><ul class="groups">${list}</ul></td></tr>`;
  });
  tbody.innerHTML = rows.join('');
  const more = document.getElementById('more');
  more.hidden = processes.length <= FIRST_ROWS;
  more.textContent = showAll ? `Show the ${FIRST_ROWS} busiest` : `Show all ${processes.length} processes`;
}

// A flame graph (icicle: callers above callees) of [name, count, children].
function flameGraph(pid, root, width) {
  const rows = [];
  function layout(node, x, w, depth) {
    if (depth > FLAME_MAX_DEPTH || w < 0.5)
      return;
    rows.push({node, x, w, depth});
    let cx = x;
    for (const child of node[2].slice().sort((a, b) => b[1] - a[1])) {
      const cw = w * child[1] / node[1];
      layout(child, cx, cw, depth + 1);
      cx += cw;
    }
  }
  layout(root, 0, width, 0);
  const height = (Math.max(...rows.map(r => r.depth)) + 1) * FLAME_ROW;
  const svg = svgEl('svg', {class: 'flame', 'data-pid': String(pid), viewBox: `0 0 ${width} ${height}`,
                            width: String(width), height: String(height)});
  for (const {node, x, w, depth} of rows) {
    const g = svgEl('g');
    const title = svgEl('title');
    title.textContent = `${node[0]} (${node[1]} of ${root[1]} hangs)`;
    g.append(title, svgEl('rect', {x: x.toFixed(1), y: depth * FLAME_ROW, width: Math.max(0.5, w - 1).toFixed(1),
                                   height: FLAME_ROW - 1, class: depth ? 'f' + (depth % 4) : 'root'}));
    const chars = Math.floor((w - 6) / 7);
    if (chars >= 3) {
      const text = svgEl('text', {x: (x + 3).toFixed(1), y: depth * FLAME_ROW + 12});
      text.textContent = node[0].length > chars ? node[0].slice(0, chars - 1) + '…' : node[0];
      g.append(text);
    }
    svg.append(g);
  }
  return svg;
}

function drawHangs(state, width) {
  const box = document.getElementById('hangs');
  if (state.hangs.length)
    box.replaceChildren(...state.hangs.map((h, i) => {
      // The newest open; the others' stacks a click away (kept open
      // across refreshes when the user opened them).
      const open = i === 0 || openHangs.has(h.id);
      const details = el('details', open ? {open: ''} : {},
        el('summary', {}, el('strong', {}, `${h.process} (pid ${h.pid})`), ` hung ${Math.round(h.duration_ms)} ms in `,
           el('code', {}, h.runnable || '(unnamed source)')),
        // Innermost frame first, as perfmon hangs shows them.
        el('pre', {}, h.frames.length ? h.frames.join('\n') : '(no stack)'));
      details.addEventListener('toggle', () => details.open ? openHangs.add(h.id) : openHangs.delete(h.id));
      return el('div', {class: 'hang', 'data-hang': h.id}, details);
    }));

  const flames = document.getElementById('flames');
  const present = new Set();
  for (const p of state.processes) {
    if (!p.flame)
      continue;
    present.add(p.pid);
    const key = width + JSON.stringify(p.flame);
    if (drawnFlames.get(p.pid) === key)
      continue;
    drawnFlames.set(p.pid, key);
    const figure = el('figure', {'data-pid': String(p.pid)},
                      el('figcaption', {}, `${p.name} (pid ${p.pid}): ${p.flame[1]} hangs merged by function`),
                      flameGraph(p.pid, p.flame, width));
    const old = flames.querySelector(`figure[data-pid="${p.pid}"]`);
    if (old)
      old.replaceWith(figure);
    else
      flames.append(figure);
  }
  if (present.size)
    flames.querySelector('p.empty')?.remove();
  for (const figure of flames.querySelectorAll('figure')) {
    if (!present.has(Number(figure.dataset.pid))) {
      drawnFlames.delete(Number(figure.dataset.pid));
      figure.remove();
    }
  }
}

let lastState = null;

function draw(state) {
  const start = performance.now();
  // Read before anything changes: reading it after would lay the whole
  // table out again, synchronously.
  const width = Math.max(300, document.getElementById('flames').clientWidth || 800);
  drawProcesses(state);
  drawHangs(state, width);
  // What a refresh costs the browser (tests/bench/view-bench.py reads it).
  const ms = performance.now() - start;
  window.refreshes = (window.refreshes || 0) + 1;
  document.body.dataset.drawMs = ms.toFixed(1);
  document.body.dataset.drawMaxMs = Math.max(ms, Number(document.body.dataset.drawMaxMs || 0)).toFixed(1);
  if (!document.body.dataset.firstDrawnMs)
    document.body.dataset.firstDrawnMs = performance.now().toFixed(1);
}

async function refresh() {
  try {
    const response = await fetch('/api/state', {headers: {Authorization: 'Bearer ' + token}, cache: 'no-store'});
    if (!response.ok)
      throw new Error(`${response.status} ${response.statusText}`);
    lastState = await response.json();
    draw(lastState);
    document.getElementById('status').textContent =
      `${lastState.processes.length} processes · ${lastState.hangs.length} hangs · updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    document.getElementById('status').textContent = 'perfmond does not answer: ' + e.message;
  }
  setTimeout(refresh, INTERVAL_MS);
}

document.getElementById('more').addEventListener('click', () => {
  showAll = !showAll;
  if (lastState)
    draw(lastState);
});
refresh();
