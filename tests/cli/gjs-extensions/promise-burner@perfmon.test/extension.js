// A test extension whose CPU is burnt in promise jobs: an async function
// that sleeps 70 ms, then awaits resolved promises in a loop, burning
// 5 ms after each (30 ms in all). The continuations run in GJS's promise
// job queue (GjsPromiseJobQueueSource), which no creation site of the
// extension's covers: only sampling the JavaScript stack of long
// dispatches charges them to it. Once, a job blocks the loop for 250 ms:
// a hang that only its JavaScript stack can name.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import GLib from 'gi://GLib';
import {burn} from './burn.js';

let burnt = 0;
let running = false;
let timer = 0;
let blocked = false;

function sleep(ms) {
    return new Promise(resolve => {
        timer = GLib.timeout_add(GLib.PRIORITY_DEFAULT, ms, () => {
            timer = 0;
            resolve();
            return GLib.SOURCE_REMOVE;
        });
    });
}

async function work() {
    while (running) {
        // eslint-disable-next-line no-await-in-loop
        await sleep(70);
        if (!blocked) {
            blocked = true;
            burnt += burn(250);
        }
        for (let i = 0; i < 6 && running; i++) {
            // eslint-disable-next-line no-await-in-loop
            await Promise.resolve();
            burnt += burn(5);
        }
    }
}

export function enable() {
    running = true;
    work().catch(logError);
}

export function disable() {
    running = false;
    if (timer !== 0)
        GLib.source_remove(timer);
    return burnt;
}

// The CPU burnt so far (ns), for the program to know when it has enough.
export function burntSoFar() {
    return burnt;
}
