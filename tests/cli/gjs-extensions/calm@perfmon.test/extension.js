// A calm test extension: a handler and a timeout that do next to nothing.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import GLib from 'gi://GLib';

let handler = 0;
let emitter = null;
let id = 0;
let calls = 0;

export function enable(action) {
    emitter = action;
    handler = action.connect('activate', () => {
        calls++;
    });
    id = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, 1, () => GLib.SOURCE_CONTINUE);
}

export function disable() {
    emitter.disconnect(handler);
    GLib.source_remove(id);
    return 0;
}
