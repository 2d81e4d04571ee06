// gjs_source_creation.js: what add-on attribution costs per source made
// and per handler connected from JavaScript (tests/bench/bench-shell-addons.py).
// Makes and removes N timeouts, then connects and disconnects N handlers,
// from a function DEPTH frames deep, and prints, as JSON, the CPU time of
// each loop (µs, the thread's own count).
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import System from 'system';

const N = Number(System.programArgs[0] ?? 5000);
const DEPTH = Number(System.programArgs[1] ?? 30);
const decoder = new TextDecoder();

function threadCpuUs() {
    const [, bytes] = GLib.file_get_contents('/proc/thread-self/schedstat');
    return Number(decoder.decode(bytes).split(' ')[0]) / 1000;
}

function onTimeout() {
    return GLib.SOURCE_REMOVE;
}

function onActivate() {
}

function nest(depth, f) {
    return depth === 0 ? f() : nest(depth - 1, f);
}

function makeSources() {
    const start = threadCpuUs();
    for (let i = 0; i < N; i++)
        GLib.source_remove(GLib.timeout_add(GLib.PRIORITY_DEFAULT, 100000, onTimeout));
    return threadCpuUs() - start;
}

function connectHandlers() {
    const action = new Gio.SimpleAction({name: 'bench'});
    const start = threadCpuUs();
    for (let i = 0; i < N; i++)
        action.disconnect(action.connect('activate', onActivate));
    return threadCpuUs() - start;
}

const sources = nest(DEPTH, makeSources);
const handlers = nest(DEPTH, connectHandlers);
print(JSON.stringify({n: N, depth: DEPTH, sources_us: Math.round(sources), handlers_us: Math.round(handlers)}));
