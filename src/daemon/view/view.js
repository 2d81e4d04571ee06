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

// Markup made once per row, group or hang (never per refresh) is written
// as HTML; everything that comes from a monitored process goes through
// esc(), or is set as text.
function esc(text) {
  return String(text).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c]);
}

// A refresh changes what changed, in the elements it drew before (keyed
// by pid, group id, hang id): rebuilding the table every 2 s was what made
// 200 processes × 50 groups slow (1.1–1.4 s a refresh). The rows are
// blocks with content-visibility: auto (view.css), so the browser styles,
// lays out and paints only those near the viewport.
function setText(node, text) {
  if (node.textContent !== text)
    node.textContent = text;
}

function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value)
    node.setAttribute(name, value);
}

// Points in 1/1000 of the interval, oldest first; the newest on the right.
function sparkPoints(points, size) {
  if (!points.length)
    return '';
  let max = 50;
  for (const v of points)
    max = v > max ? v : max;
  const start = size - points.length;
  let text = '';
  for (let i = 0; i < points.length; i++)
    text += `${i ? ' ' : ''}${start + i},${(23 - 22 * points[i] / max).toFixed(1)}`;
  return text;
}

// Iterations over 1, 2, 4 … 512 ms: one bar each, on a log scale (one
// path: cheap to draw by the thousand).
function histogramPath(durations) {
  let top = 1;
  for (const n of durations)
    top = n > top ? n : top;
  const max = Math.log1p(top);
  let d = '';
  durations.forEach((n, i) => {
    if (n > 0) {
      const h = Math.max(1, 22 * Math.log1p(n) / max);
      d += `M${i * 5 + 0.5},24v${(-h).toFixed(1)}h4v${h.toFixed(1)}z`;
    }
  });
  return d;
}

function histogramTitle(durations) {
  return 'iterations over ' + durations.map((n, i) => `${HIST_LABELS[i]} ms: ${Number(n)}`).join(', ');
}

// One group of a process's list: made once, then updated.
class GroupItem {
  constructor(id) {
    this.node = document.createElement('li');
    this.node.dataset.group = String(id);
    this.node.innerHTML = '<span class="kind"></span><span class="name" title=""></span>' +
      `<svg class="spark small" viewBox="0 0 ${GROUP_SPARK_POINTS} 24" preserveAspectRatio="none"><polyline/></svg>` +
      '<span class="num"></span><span class="num"></span>' +
      '<svg class="hist" viewBox="0 0 50 24" preserveAspectRatio="none"><path/><title></title></svg>';
    const [kind, name, spark, cpu, blocked, hist] = this.node.children;
    Object.assign(this, {kind, name, cpu, blocked, line: spark.firstChild, bars: hist.firstChild,
                         title: hist.lastChild});
  }

  update(g, interval) {
    const cpu = interval > 0 && g.recent_cpu !== undefined ? g.recent_cpu / interval : NaN;
    const blocked = interval > 0 && g.recent_blocked !== undefined ? g.recent_blocked / interval : NaN;
    const durations = g.durations || [];
    setText(this.kind, String(g.kind));
    // An add-on's code outside its compartments: estimated by sampling,
    // shown apart from the exact CPU column, after the name (by the style
    // sheet, from data-sampled: the name's text stays the name).
    const sampled = interval > 0 && g.recent_sampled_cpu !== undefined
      ? `+${percent(g.recent_sampled_cpu / interval)} sampled` : '';
    setText(this.name, String(g.name));
    setAttr(this.name, 'title', sampled
      ? `${g.name}\n${sampled}: CPU estimated by sampling the JavaScript stack of long dispatches ` +
        '(promise jobs, virtual functions …), not measured exactly'
      : String(g.name));
    if (sampled)
      setAttr(this.name, 'data-sampled', sampled);
    else if (this.name.hasAttribute('data-sampled'))
      this.name.removeAttribute('data-sampled');
    setAttr(this.line, 'points', sparkPoints(g.spark || [], GROUP_SPARK_POINTS));
    setText(this.cpu, percent(cpu));
    setText(this.blocked, percent(blocked));
    const key = durations.join();
    if (this.durations !== key) {
      this.durations = key;
      this.bars.setAttribute('d', histogramPath(durations));
      this.title.textContent = histogramTitle(durations);
    }
  }
}

function share(p) {
  return p.interval > 0 ? p.recent_cpu / p.interval : NaN;
}

// One process: a row of #processes, made once, then updated.
class ProcessRow {
  constructor(pid) {
    this.pid = pid;
    this.groups = new Map();  // group id -> GroupItem
    this.data = null;         // the newest state of the process
    this.near = false;        // near the viewport (nearViewport)
    this.stale = false;       // data not drawn yet
    this.node = document.createElement('div');
    this.node.className = 'proc';
    this.node.setAttribute('role', 'row');
    this.node.dataset.pid = String(pid);
    this.node.innerHTML = `<div class="process" role="cell"><span class="pname"></span> <span class="pid">pid ${pid}</span></div>` +
      '<div class="num cpu" role="cell"></div>' +
      `<div class="recent" role="cell"><svg class="spark" viewBox="0 0 ${SPARK_POINTS} 24" preserveAspectRatio="none"><polyline/></svg></div>` +
      '<div class="top" role="cell"><ul class="groups"></ul></div>';
    const [process, cpu, recent, top] = this.node.children;
    Object.assign(this, {process, name: process.firstChild, cpu, line: recent.firstChild.firstChild,
                         list: top.firstChild, trace: null, others: null});
  }

  update(p) {
    const interval = p.interval || 0;
    setText(this.name, String(p.name));
    setText(this.cpu, percent(share(p)));
    setAttr(this.line, 'points', sparkPoints(p.spark || [], SPARK_POINTS));
    if (p.trace && !this.trace) {
      this.process.insertAdjacentHTML('beforeend', `<br><a class="trace" href="/api/trace?pid=${this.pid}&amp;token=${esc(token)}" ` +
                                                   `download="perfmon-tasks-${this.pid}.json">task trace</a>`);
      this.trace = this.process.lastChild;
    }

    // The top groups, in their order now; those that left the top go.
    const seen = new Set();
    let at = this.list.firstChild;
    for (const g of p.groups) {
      const id = Number(g.id);
      seen.add(id);
      let item = this.groups.get(id);
      if (!item) {
        item = new GroupItem(id);
        this.groups.set(id, item);
      }
      item.update(g, interval);
      if (item.node !== at)
        this.list.insertBefore(item.node, at);
      else
        at = at.nextSibling;
    }
    for (const [id, item] of this.groups) {
      if (!seen.has(id)) {
        item.node.remove();
        this.groups.delete(id);
      }
    }
    if (p.others) {
      if (!this.others) {
        this.others = document.createElement('li');
        this.others.className = 'others';
        this.others.innerHTML = '<span class="kind"></span><span class="name"></span><span></span>' +
                                '<span class="num"></span><span></span><span></span>';
      }
      const cpu = interval > 0 && p.others.recent_cpu !== undefined ? p.others.recent_cpu / interval : NaN;
      setText(this.others.children[1], `${Number(p.others.n)} other groups`);
      setText(this.others.children[3], percent(cpu));
      if (this.others !== this.list.lastChild)
        this.list.append(this.others);
    } else if (this.others) {
      this.others.remove();
      this.others = null;
    }
  }
}

const processRows = new Map();  // pid -> ProcessRow

// Only the rows near the viewport are brought up to date at each refresh;
// the others when they come near it. With content-visibility (view.css),
// a refresh costs what is on screen, not what is in the list.
const nearViewport = new IntersectionObserver(entries => {
  for (const entry of entries) {
    const row = processRows.get(Number(entry.target.dataset.pid));
    if (!row)
      continue;
    row.near = entry.isIntersecting;
    if (row.near && row.stale) {
      row.stale = false;
      row.update(row.data);
    }
  }
}, {rootMargin: '50% 0px'});

// The indices of a longest increasing run (not necessarily contiguous) of
// positions: the rows that keep their relative order and stay put.
function longestIncreasing(positions) {
  const tails = [];    // index in positions of the smallest tail of each length
  const previous = new Array(positions.length);
  for (let i = 0; i < positions.length; i++) {
    if (positions[i] < 0)
      continue;
    let lo = 0, hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (positions[tails[mid]] < positions[i])
        lo = mid + 1;
      else
        hi = mid;
    }
    previous[i] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = i;
  }
  const kept = new Set();
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = previous[i])
    kept.add(i);
  return kept;
}

function drawProcesses(state) {
  const table = document.getElementById('processes');
  // By share as shown (0.1 %), then in the order they had: rows do not
  // swap for differences the page does not show.
  const before = new Map();
  let n = 0;
  for (let node = table.querySelector('.proc'); node; node = node.nextElementSibling)
    before.set(Number(node.dataset.pid), n++);
  const shownShare = p => Math.round(1000 * (share(p) || 0));
  const place = p => before.has(Number(p.pid)) ? before.get(Number(p.pid)) : Infinity;
  const processes = state.processes.slice().sort((a, b) => shownShare(b) - shownShare(a) || place(a) - place(b));
  const shown = showAll ? processes : processes.slice(0, FIRST_ROWS);
  const wanted = new Set(shown.map(p => Number(p.pid)));
  for (const [pid, row] of processRows) {
    if (!wanted.has(pid)) {
      nearViewport.unobserve(row.node);
      row.node.remove();
      processRows.delete(pid);
    }
  }
  // The places near the viewport now (IntersectionObserver said which
  // rows were): the rows that come to them are drawn at once, not a frame
  // later when the observer says they came.
  const position = new Map();
  let nearFirst = Infinity, nearLast = -1;
  n = 0;
  for (let node = table.querySelector('.proc'); node; node = node.nextElementSibling, n++) {
    position.set(node, n);
    if (processRows.get(Number(node.dataset.pid))?.near) {
      nearFirst = Math.min(nearFirst, n);
      nearLast = n;
    }
  }
  const rows = shown.map((p, i) => {
    const pid = Number(p.pid);
    let row = processRows.get(pid);
    if (!row) {
      row = new ProcessRow(pid);
      processRows.set(pid, row);
      row.update(p);
      nearViewport.observe(row.node);
    } else if (row.near || (i >= nearFirst - 1 && i <= nearLast + 1)) {
      row.stale = false;
      row.update(p);
    } else {
      row.stale = true;
    }
    row.data = p;
    return row;
  });
  // In the order of their share, moving as few rows as can be (a move
  // costs a style recalculation of the row).
  const kept = longestIncreasing(rows.map(row => position.has(row.node) ? position.get(row.node) : -1));
  let next = null;
  for (let i = rows.length - 1; i >= 0; i--) {
    if (!kept.has(i) && (rows[i].node.parentNode !== table || rows[i].node.nextSibling !== next))
      table.insertBefore(rows[i].node, next);
    next = rows[i].node;
  }
  const more = document.getElementById('more');
  more.hidden = processes.length <= FIRST_ROWS;
  setText(more, showAll ? `Show the ${FIRST_ROWS} busiest` : `Show all ${processes.length} processes`);
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

// A hang: made once (its stack does not change), kept while perfmond
// lists it.
function hangItem(h) {
  const div = el('div', {class: 'hang', 'data-hang': h.id});
  // Innermost frame first, as perfmon hangs shows them; the add-on whose
  // code ran, when the hang was caught in an extension's or plugin's.
  div.innerHTML = `<details><summary><strong>${esc(h.process)} (pid ${Number(h.pid)})</strong> hung ` +
                  `${Math.round(h.duration_ms)} ms in <code>${esc(h.runnable || '(unnamed source)')}</code>` +
                  (h.addon ? ` <span class="addon">add-on <code>${esc(h.addon)}</code></span>` : '') +
                  `</summary><pre>${esc(h.frames.length ? h.frames.join('\n') : '(no stack)')}</pre></details>`;
  const details = div.firstChild;
  // What the user chose stays across refreshes; else the newest is open.
  details.firstChild.addEventListener('click', () => userOpened.set(h.id, !details.open));
  return div;
}

const hangItems = new Map();  // hang id -> its div
const userOpened = new Map(); // hang id -> open, as the user left it

function drawHangs(state, width) {
  const box = document.getElementById('hangs');
  const listed = new Set(state.hangs.map(h => h.id));
  for (const [id, div] of hangItems) {
    if (!listed.has(id)) {
      div.remove();
      hangItems.delete(id);
      userOpened.delete(id);
    }
  }
  if (!state.hangs.length && !box.querySelector('p.empty'))
    box.append(el('p', {class: 'empty'}, 'No hang so far.'));
  if (state.hangs.length) {
    box.querySelector('p.empty')?.remove();
    let at = box.firstChild;
    state.hangs.forEach((h, i) => {
      let div = hangItems.get(h.id);
      if (!div) {
        div = hangItem(h);
        hangItems.set(h.id, div);
      }
      const open = userOpened.has(h.id) ? userOpened.get(h.id) : i === 0;
      if (div.firstChild.open !== open)
        div.firstChild.open = open;
      if (div !== at)
        box.insertBefore(div, at);
      else
        at = at.nextSibling;
    });
  }

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

// What a draw costs the browser, read by tests/bench/view-bench.py from
// document.body.dataset: the first (every row made) apart; for each
// refresh after it, the time to change the elements and lay the page out
// (drawMs, the slowest drawMaxMs), and until the frame after it was drawn
// (frameMs, frameMaxMs: painting included, and what waits for the frame).
function recordTiming(start) {
  const data = document.body.dataset;
  const ms = performance.now() - start;
  const first = !data.firstDrawMs;
  if (first) {
    data.firstDrawMs = ms.toFixed(1);
    data.firstDrawnMs = performance.now().toFixed(1);
  } else {
    data.drawMs = ms.toFixed(1);
    data.drawsMs = ((data.drawsMs ? data.drawsMs + ' ' : '') + ms.toFixed(0)).split(' ').slice(-20).join(' ');
    data.drawMaxMs = Math.max(ms, Number(data.drawMaxMs || 0)).toFixed(1);
  }
  window.refreshes = (window.refreshes || 0) + 1;
  requestAnimationFrame(() => setTimeout(() => {
    if (first)
      return;
    const frame = performance.now() - start;
    data.frameMs = frame.toFixed(1);
    data.framesMs = ((data.framesMs ? data.framesMs + ' ' : '') + frame.toFixed(0)).split(' ').slice(-20).join(' ');
    data.frameMaxMs = Math.max(frame, Number(data.frameMaxMs || 0)).toFixed(1);
  }, 0));
}

function draw(state) {
  const start = performance.now();
  // Read before anything changes: reading it after would lay the page out
  // once more.
  const width = Math.max(300, document.getElementById('flames').clientWidth || 800);
  drawProcesses(state);
  drawHangs(state, width);
  setText(document.getElementById('status'),
          `${state.processes.length} processes · ${state.hangs.length} hangs · updated ${new Date().toLocaleTimeString()}`);
  // The layout the browser would do before the next frame anyway, done
  // here to be counted.
  void document.body.offsetHeight;
  recordTiming(start);
}

async function refresh() {
  try {
    const response = await fetch('/api/state', {headers: {Authorization: 'Bearer ' + token}, cache: 'no-store'});
    if (!response.ok)
      throw new Error(`${response.status} ${response.statusText}`);
    lastState = await response.json();
    draw(lastState);
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
