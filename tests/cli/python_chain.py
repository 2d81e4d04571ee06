#!/usr/bin/python3
# python_chain.py: a PyGObject program as users write it, that knows
# nothing of perfmon: timeout → Gio.Task in a thread → completion → idle →
# timeout, then a synchronous D-Bus call when a bus name is given. A helper
# program for the tests of perfmon run --trace (test_cli_run_trace.py).
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: python_chain.py [BUS_NAME OBJECT_PATH INTERFACE METHOD]

import sys

import gi
gi.require_version('Gio', '2.0')
from gi.repository import Gio, GLib

loop = GLib.MainLoop()


def call_service():
    if len(sys.argv) > 4:
        bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        name, path, interface, method = sys.argv[1:5]
        bus.call_sync(name, path, interface, method, None, None,
                      Gio.DBusCallFlags.NONE, -1, None)
    loop.quit()
    return GLib.SOURCE_REMOVE


def on_idle():
    GLib.timeout_add(20, call_service)
    return GLib.SOURCE_REMOVE


def on_info(file, result):
    file.query_info_finish(result)
    GLib.idle_add(on_idle)


def on_timeout():
    # Gio runs query_info_async in a thread of GTask's pool.
    Gio.File.new_for_path('/').query_info_async('standard::name', Gio.FileQueryInfoFlags.NONE,
                                               GLib.PRIORITY_DEFAULT, None, on_info)
    return GLib.SOURCE_REMOVE


GLib.timeout_add(30, on_timeout)
loop.run()
