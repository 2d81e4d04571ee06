// SPDX-License-Identifier: LGPL-2.1-or-later
//
// A GJS application's short jank: its stack log names the JavaScript
// function. A 400 ms task after the start-up window is a stack sampling
// jank (the seed's 150 ms schedule), over before the seed's first sample:
// its log holds the stack taken while it ran, with the JavaScript frames.
// The jank limits are per process: a process of its own. Exits 1 if the
// test fails.

imports.gi.versions.GLib = '2.0';
imports.gi.versions.Perfmon = '1';
const {GLib, Perfmon} = imports.gi;
const System = imports.system;

function recalculateSpreadsheet(ms) {
    const end = GLib.get_monotonic_time() + ms * 1000;
    let total = 0;
    while (GLib.get_monotonic_time() < end)
        total++;
    return total;
}

const dir = GLib.dir_make_tmp('perfmon-gjs-jank-XXXXXX');
const hangMonitor = Perfmon.HangMonitor.new(Perfmon.Monitor.get_default());
hangMonitor.pings_dir = `${dir}/pings`;
hangMonitor.log_dir = dir;
hangMonitor.set_event_config('MAIN_THREAD_JANK', {
    log_type: '1', sample_interval: '150', sample_count: '10',
    ignore_startup_time: '3', report_times_per_app: '1',
});
hangMonitor.start();

const loop = new GLib.MainLoop(null, false);
let event = null;
hangMonitor.connect('jank', (monitor, name, params) => {
    event = params.deepUnpack();
    loop.quit();
});
GLib.timeout_add(GLib.PRIORITY_DEFAULT, 3500, () => {
    recalculateSpreadsheet(400);
    return GLib.SOURCE_REMOVE;
});
GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, 20, () => {
    loop.quit();
    return GLib.SOURCE_REMOVE;
});
loop.run();
hangMonitor.stop();

// What the test expects: one jank event, with at least one sample and one
// log, and the log names the JavaScript function; else it fails (exit 1).
let failed = null;
if (event === null) {
    failed = 'no jank event';
} else {
    const logs = event['external_log'].deepUnpack();
    const sampleCount = event['sample_count'].deepUnpack();
    if (sampleCount < 1 || logs.length !== 1) {
        failed = `sample_count ${sampleCount}, ${logs.length} logs`;
    } else {
        const [, bytes] = GLib.file_get_contents(logs[0]);
        const log = new TextDecoder().decode(bytes);
        print(log);
        if (!log.includes('script recalculateSpreadsheet'))
            failed = 'the log does not name recalculateSpreadsheet';
    }
}
GLib.spawn_command_line_sync(`rm -rf ${dir}`);
if (failed !== null) {
    printerr(`not ok: ${failed}`);
    System.exit(1);
}
print('ok: the jank log names recalculateSpreadsheet');
