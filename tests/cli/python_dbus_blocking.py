#!/usr/bin/python3
# python_dbus_blocking.py: a PyGObject program as users write it, that knows
# nothing of perfmon, making one synchronous D-Bus call from a timeout
# callback: Gio.DBusConnection.call_sync() or Gio.DBusProxy.call_sync().
# A helper program for test_cli_run_blocked_bindings.py, which checks it.
#
# Usage: python_dbus_blocking.py connection|proxy BUS_NAME OBJECT_PATH INTERFACE
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import sys

from gi.repository import Gio, GLib

how, name, path, interface = sys.argv[1:5]
loop = GLib.MainLoop()


def call_slow():
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    if how == 'proxy':
        proxy = Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.NONE, None, name, path, interface, None)
        proxy.call_sync('Slow', None, Gio.DBusCallFlags.NONE, -1, None)
    else:
        bus.call_sync(name, path, interface, 'Slow', None, None, Gio.DBusCallFlags.NONE, -1, None)
    print('python_dbus_blocking: called', flush=True)
    loop.quit()
    return GLib.SOURCE_REMOVE


GLib.timeout_add(20, call_slow)
loop.run()
