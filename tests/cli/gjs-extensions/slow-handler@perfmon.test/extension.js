// A test extension whose handler of a signal the program emits blocks the
// loop for 300 ms.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import {burn} from './burn.js';

let burnt = 0;
let handler = 0;
let emitter = null;

function onActivate() {
    burnt += burn(300);
}

export function enable(action) {
    emitter = action;
    handler = action.connect('activate', onActivate);
}

export function disable() {
    emitter.disconnect(handler);
    return burnt;
}
