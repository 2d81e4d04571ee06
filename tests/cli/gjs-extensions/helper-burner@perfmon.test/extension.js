// A test extension that burns CPU in timeouts made through JavaScript
// helpers (GJS's setInterval, imports.mainloop), so that the helpers'
// frames are on top of the extension's when the source is made.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import {burn} from './burn.js';

const Mainloop = imports.mainloop;

let burnt = 0;
let interval = null;
let id = 0;

export function enable() {
    interval = setInterval(() => {
        burnt += burn(5);
    }, 50);
    id = Mainloop.timeout_add(70, () => {
        burnt += burn(5);
        return true;
    });
}

export function disable() {
    clearInterval(interval);
    Mainloop.source_remove(id);
    return burnt;
}

// The CPU burnt so far (ns), for the program to know when it has enough.
export function burntSoFar() {
    return burnt;
}
