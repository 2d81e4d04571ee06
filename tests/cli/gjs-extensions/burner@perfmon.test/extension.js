// A test extension that burns CPU in a GLib timeout it makes directly.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import GLib from 'gi://GLib';
import {burn} from './burn.js';

let burnt = 0;
let id = 0;

export function enable() {
    id = GLib.timeout_add(GLib.PRIORITY_DEFAULT, 50, () => {
        burnt += burn(10);
        return GLib.SOURCE_CONTINUE;
    });
}

export function disable() {
    GLib.source_remove(id);
    return burnt;
}

// The CPU burnt so far (ns), for the program to know when it has enough.
export function burntSoFar() {
    return burnt;
}
