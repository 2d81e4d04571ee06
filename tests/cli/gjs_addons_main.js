// gjs_addons_main.js: a GJS program that loads "extensions" from
// $XDG_DATA_HOME/gnome-shell/extensions, as GNOME Shell lays them out,
// runs them for a while, and prints on its last line, as JSON, the CPU
// each one burnt (µs, measured by the extension) and where the program's
// own timeout was made.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';

const UUIDS = ['burner@perfmon.test', 'helper-burner@perfmon.test', 'slow-handler@perfmon.test',
    'promise-burner@perfmon.test', 'calm@perfmon.test'];
// Runs at least RUN_MS, then until each burner has burnt ENOUGH_NS of CPU
// (on a loaded machine its timeouts fire less often), at most MAX_RUN_MS.
const RUN_MS = 2500;
const ENOUGH_NS = 150e6;
const MAX_RUN_MS = 60000;
const BURNERS = ['burner@perfmon.test', 'helper-burner@perfmon.test', 'promise-burner@perfmon.test'];

const dir = `${GLib.get_user_data_dir()}/gnome-shell/extensions`;
const action = new Gio.SimpleAction({name: 'ping'});
const extensions = {};
const loop = new GLib.MainLoop(null, false);

function emitSignal() {
    action.activate(null);
    return GLib.SOURCE_REMOVE;
}

// Loaded while the loop runs, as GNOME Shell does, not with a top-level
// await: what follows an await runs in a promise job, and a loop run from
// there could not run the extensions' own promise jobs (GJS's job queue
// source would be in its dispatch already).
Promise.all(UUIDS.map(uuid => import(`file://${dir}/${uuid}/extension.js`))).then(modules => {
    modules.forEach((module, i) => {
        extensions[UUIDS[i]] = module;
        module.enable(action);
    });
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 600, emitSignal);
    const start = GLib.get_monotonic_time();
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, RUN_MS, () => {
        const ranMs = (GLib.get_monotonic_time() - start) / 1000;
        if (ranMs < MAX_RUN_MS && BURNERS.some(uuid => extensions[uuid].burntSoFar() < ENOUGH_NS))
            return GLib.SOURCE_CONTINUE;
        loop.quit();
        return GLib.SOURCE_REMOVE;
    });
}).catch(error => {
    logError(error);
    loop.quit();
});
loop.run();

const burnt = {};
for (const uuid of UUIDS)
    burnt[uuid] = Math.round(extensions[uuid].disable() / 1000);
print(JSON.stringify(burnt));
