// gjs_dbus_blocking.js: a GJS program as users write it, that knows nothing
// of perfmon, making one synchronous D-Bus call from a timeout callback:
// Gio.DBusConnection.call_sync(), or the SlowSync() method of a proxy made
// with Gio.DBusProxy.makeProxyWrapper(). A helper program for
// test_cli_run_blocked_bindings.py, which checks it.
//
// Usage: gjs gjs_dbus_blocking.js connection|proxy BUS_NAME OBJECT_PATH INTERFACE
//
// SPDX-License-Identifier: LGPL-2.1-or-later

const {Gio, GLib} = imports.gi;

const [how, name, path, iface] = ARGV;
const loop = new GLib.MainLoop(null, false);

function callSlow() {
    if (how === 'proxy') {
        const SlowProxy = Gio.DBusProxy.makeProxyWrapper(
            `<node><interface name="${iface}"><method name="Slow"/></interface></node>`);
        const proxy = new SlowProxy(Gio.DBus.session, name, path);
        proxy.SlowSync();
    } else {
        Gio.DBus.session.call_sync(name, path, iface, 'Slow', null, null,
            Gio.DBusCallFlags.NONE, -1, null);
    }
    print('gjs_dbus_blocking: called');
    loop.quit();
    return GLib.SOURCE_REMOVE;
}

GLib.timeout_add(GLib.PRIORITY_DEFAULT, 20, callSlow);
loop.run();
