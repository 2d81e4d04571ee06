// gjs_callback_names.js: a GJS program, as one is written, that makes its
// timeouts in one function with different callbacks: a function declared
// for it, another, a method bound to its object, and an arrow function
// (tests/cli/test_cli_run_js_names.py, issue 24 point 3)
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import GLib from 'gi://GLib';

function spin(ms) {
    const end = GLib.get_monotonic_time() + ms * 1000;
    while (GLib.get_monotonic_time() < end)
        ;
}

function refreshClock() {
    spin(2);
    return GLib.SOURCE_CONTINUE;
}

function pollWeather() {
    spin(2);
    return GLib.SOURCE_CONTINUE;
}

class Panel {
    constructor() {
        this.ticks = 0;
    }

    tick() {
        this.ticks++;
        spin(1);
        return GLib.SOURCE_CONTINUE;
    }
}

const panel = new Panel();

function start() {
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 20, refreshClock);
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 30, pollWeather);
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 40, panel.tick.bind(panel));
    GLib.idle_add(GLib.PRIORITY_DEFAULT_IDLE, () => {
        spin(1);
        return GLib.SOURCE_REMOVE;
    });
}

start();
const loop = new GLib.MainLoop(null, false);
GLib.timeout_add(GLib.PRIORITY_DEFAULT, 1200, () => {
    loop.quit();
    return GLib.SOURCE_REMOVE;
});
loop.run();
