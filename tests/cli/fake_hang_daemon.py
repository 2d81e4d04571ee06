#!/usr/bin/python3
# fake_hang_daemon.py: a stand-in for perfmond that hands out the reports
# of tests/hang-reports/cases.json as they are, valid or not
#
# (A helper program for the tests, not a test: the assertions are in
# test_cli_hang_reports.py.)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: fake_hang_daemon.py CASES_JSON (on $DBUS_SESSION_BUS_ADDRESS).
# Owns org.perfmon.Daemon1; ListHangs lists one hang per case, its id the
# case's name, all of pid 4242 in the runnable "x"; GetHang(id) answers the
# case's report. Prints "ready" once it owns the name.

import json
import sys

import gi
gi.require_version('Gio', '2.0')
from gi.repository import Gio, GLib  # noqa: E402

NAME = 'org.perfmon.Daemon1'
PATH = '/org/perfmon/Daemon1'
XML = '''<node><interface name="org.perfmon.Daemon1">
  <method name="ListHangs"><arg name="hangs" type="a(susds)" direction="out"/></method>
  <method name="GetHang"><arg name="id" type="s" direction="in"/>
    <arg name="report" type="s" direction="out"/></method>
</interface></node>'''


def main():
    with open(sys.argv[1], encoding='utf-8') as f:
        cases = {case['name']: case['report'] for case in json.load(f)}
    loop = GLib.MainLoop()

    def on_call(connection, sender, path, interface, method, parameters, invocation):
        if method == 'ListHangs':
            hangs = [(name, 4242, 'fake', 1.0, 'x') for name in cases]
            invocation.return_value(GLib.Variant('(a(susds))', (hangs,)))
        elif parameters[0] in cases:
            invocation.return_value(GLib.Variant('(s)', (cases[parameters[0]],)))
        else:
            invocation.return_dbus_error('org.freedesktop.DBus.Error.InvalidArgs', 'no hang has the id')

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
