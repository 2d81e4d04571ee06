// gjs_exact_wakeups.js: a GJS program that runs one "extension"
// (long-burner@perfmon.test, from $XDG_DATA_HOME/gnome-shell/extensions),
// whose timeout burns 40 ms every 200 ms, and prints on its last line, as
// JSON, how many of those dispatches ran in the measured time, how long
// they took (wall-clock ms), and how
// often the thread named "perfmon-hang" (perfmon run's watchdog) went to
// sleep meanwhile, as the kernel counts it (voluntary context switches).
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';

const UUID = 'long-burner@perfmon.test';
const SETTLE_MS = 1000;
const RUN_MS = 4000;
const decoder = new TextDecoder();

function read(path) {
    return decoder.decode(GLib.file_get_contents(path)[1]);
}

// The watchdog's voluntary context switches, or -1 if it has none.
function watchdogSleeps() {
    const tasks = Gio.File.new_for_path('/proc/self/task');
    const children = tasks.enumerate_children('standard::name', Gio.FileQueryInfoFlags.NONE, null);
    let info;
    while ((info = children.next_file(null)) !== null) {
        const task = `/proc/self/task/${info.get_name()}`;
        if (read(`${task}/comm`).trim() !== 'perfmon-hang')
            continue;
        const line = read(`${task}/status`).split('\n')
            .find(l => l.startsWith('voluntary_ctxt_switches:'));
        return Number(line.split(/\s+/)[1]);
    }
    return -1;
}

// Runs @func; an error ends the program, as it would without a loop.
function orQuit(func) {
    return () => {
        try {
            return func();
        } catch (error) {
            logError(error);
            loop.quit();
            return GLib.SOURCE_REMOVE;
        }
    };
}

const loop = new GLib.MainLoop(null, false);
const dirPath = `${GLib.get_user_data_dir()}/gnome-shell/extensions`;
const result = {};
let extension = null;

import(`file://${dirPath}/${UUID}/extension.js`).then(module => {
    extension = module;
    module.enable();
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, SETTLE_MS, orQuit(() => {
        result.sleeps = watchdogSleeps();
        result.dispatches = extension.dispatchesSoFar();
        result.wall_ms = extension.wallUsSoFar();
        GLib.timeout_add(GLib.PRIORITY_DEFAULT, RUN_MS, orQuit(() => {
            result.sleeps = watchdogSleeps() - result.sleeps;
            result.dispatches = extension.dispatchesSoFar() - result.dispatches;
            result.wall_ms = Math.round((extension.wallUsSoFar() - result.wall_ms) / 1000);
            loop.quit();
            return GLib.SOURCE_REMOVE;
        }));
        return GLib.SOURCE_REMOVE;
    }));
}).catch(error => {
    logError(error);
    loop.quit();
});
loop.run();
extension?.disable();
print(JSON.stringify(result));
