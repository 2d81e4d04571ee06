// A test extension whose timeout, made directly (so charged exactly, by
// its creation site), burns 40 ms of CPU every 200 ms: long enough for the
// JavaScript sampler's schedule, never a hang.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import GLib from 'gi://GLib';
import {burn} from './burn.js';

let id = 0;
let dispatches = 0;
let wallUs = 0;

export function enable() {
    id = GLib.timeout_add(GLib.PRIORITY_DEFAULT, 200, () => {
        const start = GLib.get_monotonic_time();
        burn(40);
        wallUs += GLib.get_monotonic_time() - start;
        dispatches++;
        return GLib.SOURCE_CONTINUE;
    });
}

export function disable() {
    GLib.source_remove(id);
}

export function dispatchesSoFar() {
    return dispatches;
}

// The wall-clock time its dispatches took so far, µs (longer than their
// 40 ms of CPU on a loaded machine).
export function wallUsSoFar() {
    return wallUs;
}
