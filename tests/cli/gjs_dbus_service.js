// gjs_dbus_service.js: a GJS D-Bus service as users write it, that knows
// nothing of perfmon: an object exported with Gio.DBusExportedObject
// (a GDBusInterfaceSkeleton), owning a name on the session bus. A helper
// program for test_cli_run_trace.py, which checks it.
//
// Usage: gjs gjs_dbus_service.js: owns NAME, serves INTERFACE.Slow at PATH
// (answered at once), prints "ready" once it owns the name.
//
// SPDX-License-Identifier: LGPL-2.1-or-later

const {Gio, GLib} = imports.gi;

const NAME = 'org.perfmon.test.SlowPeer';
const PATH = '/org/perfmon/test/SlowPeer';
const XML = `<node>
  <interface name="org.perfmon.test.SlowPeer">
    <method name="Slow"/>
  </interface>
</node>`;

class SlowPeer {
    Slow() {
        // The reply goes out when the method returns.
    }
}

const loop = new GLib.MainLoop(null, false);
let exported = null;

Gio.bus_own_name(Gio.BusType.SESSION, NAME, Gio.BusNameOwnerFlags.NONE,
    connection => {
        exported = Gio.DBusExportedObject.wrapJSObject(XML, new SlowPeer());
        exported.export(connection, PATH);
    },
    () => print('ready'),
    () => loop.quit());
loop.run();
