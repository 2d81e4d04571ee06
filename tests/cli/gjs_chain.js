// gjs_chain.js: a GJS program as users write it, that knows nothing of
// perfmon: timeout → GTask in a thread → completion → idle → timeout, then
// a synchronous D-Bus call when a bus name is given. A helper program for
// the tests of perfmon run --trace (test_cli_run_trace.py), which check it.
//
// Usage: gjs gjs_chain.js [BUS_NAME OBJECT_PATH INTERFACE METHOD]
//
// SPDX-License-Identifier: LGPL-2.1-or-later

const {Gio, GLib} = imports.gi;

const loop = new GLib.MainLoop(null, false);

function callService() {
    if (ARGV.length >= 4) {
        const [name, path, iface, method] = ARGV;
        Gio.DBus.session.call_sync(name, path, iface, method, null, null,
            Gio.DBusCallFlags.NONE, -1, null);
    }
    loop.quit();
    return GLib.SOURCE_REMOVE;
}

function onIdle() {
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 20, callService);
    return GLib.SOURCE_REMOVE;
}

function onInfo(file, result) {
    file.query_info_finish(result);
    GLib.idle_add(GLib.PRIORITY_DEFAULT_IDLE, onIdle);
}

function onTimeout() {
    // Gio runs query_info_async in a thread of GTask's pool.
    Gio.File.new_for_path('/').query_info_async('standard::name', Gio.FileQueryInfoFlags.NONE,
        GLib.PRIORITY_DEFAULT, null, onInfo);
    return GLib.SOURCE_REMOVE;
}

GLib.timeout_add(GLib.PRIORITY_DEFAULT, 30, onTimeout);
loop.run();
