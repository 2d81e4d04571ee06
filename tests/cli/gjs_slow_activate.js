// gjs_slow_activate.js: a GJS application whose activate does its start-up
// work synchronously, as many do (build the UI, load state): ~300 ms of CPU
// outside any dispatch of the main loop, then it quits.
//
// SPDX-License-Identifier: LGPL-2.1-or-later

const {Gio, GLib} = imports.gi;

function buildEverything() {
    const end = GLib.get_monotonic_time() + 300 * 1000;
    let n = 0;
    while (GLib.get_monotonic_time() < end)
        n++;
    return n;
}

const app = new Gio.Application({
    application_id: 'org.perfmon.test.SlowActivate',
    flags: Gio.ApplicationFlags.NON_UNIQUE,
});
app.connect('activate', () => {
    app.hold();
    buildEverything();
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 200, () => {
        print('gjs_slow_activate: done');
        app.release();
        return GLib.SOURCE_REMOVE;
    });
});
app.run([imports.system.programInvocationName]);
