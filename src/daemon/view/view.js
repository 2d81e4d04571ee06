// about:performance: polls perfmond's /api/state (token in the
// Authorization header) and draws the processes, their top groups and
// the hangs. Shares are over each process's last poll interval (perfmond
// sends them); sparklines are drawn from the states seen since the page
// was opened: the server keeps no state for the page. No network beyond
// this server; the CSP forbids anything else.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';
const INTERVAL_MS = 2000;
const HISTORY = 60;
const TOP_GROUPS = 5;
const previous = new Map();  // pid -> {timestamp} of the last state drawn
const history = new Map();   // pid -> [share]

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {}))
    node.setAttribute(k, v);
  for (const child of children)
    node.append(child);
  return node;
}

function percent(x) {
  return isFinite(x) ? (100 * x).toFixed(1) + ' %' : '–';
}

function sparkline(values) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('viewBox', `0 0 ${HISTORY} 24`);
  svg.setAttribute('preserveAspectRatio', 'none');
  const max = Math.max(0.05, ...values);
  const line = document.createElementNS(ns, 'polyline');
  const start = HISTORY - values.length;
  line.setAttribute('points', values.map((v, i) => `${start + i},${(23 - 22 * v / max).toFixed(1)}`).join(' '));
  svg.append(line);
  return svg;
}

function frameName(report, i) {
  const symbols = report.symbols || [];
  if (symbols[i])
    return symbols[i];
  const frame = report.stack[i];
  if (typeof frame === 'string')
    return frame;
  const module = (report.modules || [])[frame[0]];
  return (module ? module[0] : '?') + '+0x' + frame[1];
}

function drawProcesses(state) {
  const tbody = document.querySelector('#processes tbody');
  const rows = [];
  for (const p of state.processes) {
    // Shares over the process's last poll interval, from perfmond.
    const interval = p.interval || 0;
    const share = interval > 0 ? p.recent_cpu / interval : NaN;
    const before = previous.get(p.pid);
    if (interval > 0 && (!before || before.timestamp !== p.timestamp)) {
      const h = history.get(p.pid) || [];
      h.push(Math.max(0, share));
      if (h.length > HISTORY)
        h.shift();
      history.set(p.pid, h);
      previous.set(p.pid, {timestamp: p.timestamp});
    }
    const list = el('ul', {class: 'groups'});
    for (const g of p.groups.slice(0, TOP_GROUPS)) {
      const cpu = interval > 0 && g.recent_cpu !== undefined ? g.recent_cpu / interval : NaN;
      const blocked = interval > 0 && g.recent_blocked !== undefined ? g.recent_blocked / interval : NaN;
      list.append(el('li', {}, el('span', {class: 'kind'}, g.kind), el('span', {class: 'name', title: g.name}, g.name),
                     el('span', {class: 'num'}, percent(cpu)), el('span', {class: 'num'}, percent(blocked))));
    }
    rows.push(el('tr', {'data-pid': String(p.pid)},
                 el('td', {}, p.name, ' ', el('span', {class: 'pid'}, 'pid ' + p.pid)),
                 el('td', {class: 'num'}, percent(share)),
                 el('td', {}, sparkline(history.get(p.pid) || [])),
                 el('td', {}, list)));
  }
  tbody.replaceChildren(...rows);
}

function drawHangs(state) {
  const box = document.getElementById('hangs');
  if (!state.hangs.length)
    return;
  box.replaceChildren(...state.hangs.map(h => {
    const report = h.report || {};
    // Innermost frame first, as perfmon hangs show them.
    const frames = (report.stack || []).map((_, i) => frameName(report, i)).reverse();
    return el('div', {class: 'hang', 'data-hang': h.id},
              el('strong', {}, `${h.process} (pid ${h.pid})`), ` hung ${Math.round(h.duration_ms)} ms in `,
              el('code', {}, h.runnable || '(unnamed source)'),
              el('pre', {}, frames.length ? frames.join('\n') : '(no stack)'));
  }));
}

async function refresh() {
  try {
    const response = await fetch('/api/state', {headers: {Authorization: 'Bearer ' + token}, cache: 'no-store'});
    if (!response.ok)
      throw new Error(`${response.status} ${response.statusText}`);
    const state = await response.json();
    const start = performance.now();
    drawProcesses(state);
    drawHangs(state);
    // What a refresh costs the browser (tests/bench/view-bench.py reads it).
    const ms = performance.now() - start;
    document.body.dataset.drawMs = ms.toFixed(1);
    document.body.dataset.drawMaxMs = Math.max(ms, Number(document.body.dataset.drawMaxMs || 0)).toFixed(1);
    document.getElementById('status').textContent =
      `${state.processes.length} processes · ${state.hangs.length} hangs · updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    document.getElementById('status').textContent = 'perfmond does not answer: ' + e.message;
  }
  setTimeout(refresh, INTERVAL_MS);
}

refresh();
