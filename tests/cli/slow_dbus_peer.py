#!/usr/bin/python3
# slow_dbus_peer.py: a D-Bus peer that answers Slow() after a delay, for
# the blocked-time tests of perfmon run
#
# (A helper program for the tests, not a test: the assertions are in
# the test that runs it.)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: slow_dbus_peer.py DELAY_MS (on $DBUS_SESSION_BUS_ADDRESS). Owns
# NAME, serves INTERFACE.Slow at PATH, prints "ready" once it owns the name,
# and answers each call DELAY_MS after it came, without blocking its loop.

import sys

import gi
gi.require_version('Gio', '2.0')
from gi.repository import Gio, GLib  # noqa: E402

NAME = 'org.perfmon.test.SlowPeer'
PATH = '/org/perfmon/test/SlowPeer'
INTERFACE = 'org.perfmon.test.SlowPeer'
XML = '<node><interface name="%s"><method name="Slow"/></interface></node>' % INTERFACE


def main():
    delay_ms = int(sys.argv[1])
    loop = GLib.MainLoop()

    def on_call(connection, sender, path, interface, method, parameters, invocation):
        GLib.timeout_add(delay_ms, lambda: invocation.return_value(None) or False)

    def on_bus(connection, name):
        info = Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0]
        connection.register_object(PATH, info, on_call, None, None)

    def on_name(connection, name):
        print('ready', flush=True)

    Gio.bus_own_name(Gio.BusType.SESSION, NAME, Gio.BusNameOwnerFlags.NONE, on_bus, on_name,
                     lambda *args: loop.quit())
    loop.run()


if __name__ == '__main__':
    main()
