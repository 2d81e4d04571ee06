// A GJS script that ends while its hang monitor still runs, with hangs
// found and their signals possibly still queued. The monitor is stopped
// by its dispose during GJS's teardown; stopping must then deliver only
// its own queued signals, never dispatch GJS's sources (it used to, and
// GJS crashed at exit). The test is this script exiting with status 0.
//
// SPDX-License-Identifier: LGPL-2.1-or-later

imports.gi.versions.Perfmon = '1';
const {GLib, Perfmon} = imports.gi;

const hangMonitor = Perfmon.HangMonitor.new(Perfmon.Monitor.get_default());
hangMonitor.threshold = 50;
hangMonitor.pings_dir = GLib.dir_make_tmp('perfmon-gjs-exit-XXXXXX');
hangMonitor.log_dir = hangMonitor.pings_dir;
let hangs = 0;
hangMonitor.connect('hang', () => hangs++);
hangMonitor.start();

let stalls = 0;
GLib.idle_add(GLib.PRIORITY_DEFAULT, () => {
    const until = Date.now() + 120;
    while (Date.now() < until)
        ;
    return ++stalls < 3 ? GLib.SOURCE_CONTINUE : GLib.SOURCE_REMOVE;
});
// More sources of GJS's own, still attached at exit.
GLib.timeout_add(GLib.PRIORITY_DEFAULT, 60000, () => GLib.SOURCE_REMOVE);

const loop = new GLib.MainLoop(null, false);
GLib.timeout_add(GLib.PRIORITY_DEFAULT, 600, () => {
    loop.quit();
    return GLib.SOURCE_REMOVE;
});
loop.run();

if (stalls !== 3)
    throw new Error(`expected 3 stalls, ran ${stalls}`);
print(`# ${hangs} hangs delivered before exit; exiting with the monitor running`);
