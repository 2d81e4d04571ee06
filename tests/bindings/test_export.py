#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Perfmon.Monitor.export() through PyGObject, on a private bus.

Run with Debian's /usr/bin/python3 (it has PyGObject) and the environment
tests/bindings/meson.build sets up. A Python program exports its monitor
and another connection of the same process reads it back, as perfmond
would. Exits non-zero if any test fails.
"""

import os
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Gio', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import Gio, GLib, Perfmon  # noqa: E402

PATH = '/org/perfmon/Monitor1'
INTERFACE = 'org.perfmon.Monitor1'


class TestExport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bus = Gio.TestDBus.new(Gio.TestDBusFlags.NONE)
        cls.bus.up()

    @classmethod
    def tearDownClass(cls):
        cls.bus.down()

    def connect(self):
        return Gio.DBusConnection.new_for_address_sync(
            self.bus.get_bus_address(),
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
            Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)

    def call(self, client, name, interface, method, parameters):
        """Calls asynchronously, iterating the default context meanwhile:
        the exporter runs there."""
        result = {}

        def done(connection, res):
            try:
                result['reply'] = connection.call_finish(res)
            except GLib.Error as e:
                result['error'] = e

        client.call(name, PATH, interface, method, parameters, None,
                    Gio.DBusCallFlags.NO_AUTO_START, 10000, None, done)
        context = GLib.MainContext.default()
        while not result:
            context.iteration(True)
        if 'error' in result:
            raise result['error']
        return result['reply']

    def test_export_snapshot_and_properties(self):
        monitor = Perfmon.Monitor.new(GLib.MainContext.default())
        window = monitor.get_window_group(3, 'Python window')
        server = self.connect()
        client = self.connect()
        monitor.export_full(None, server, Perfmon.ExportFlags.NO_REGISTER)
        try:
            name = server.get_unique_name()
            reply = self.call(client, name, INTERFACE, 'GetSnapshot', None)
            snapshot = Perfmon.Snapshot.new_from_variant(reply.get_child_value(0).get_variant())
            self.assertEqual(snapshot.get_pid(), os.getpid())
            stats = snapshot.lookup(window.get_id())
            self.assertIsNotNone(stats)
            self.assertEqual(stats.get_name(), 'Python window')

            pid = self.call(client, name, 'org.freedesktop.DBus.Properties', 'Get',
                            GLib.Variant('(ss)', (INTERFACE, 'Pid')))
            self.assertEqual(pid.unpack()[0], os.getpid())

            with self.assertRaises(GLib.Error) as cm:
                self.call(client, name, INTERFACE, 'SetEventConfig',
                          GLib.Variant('(sa{ss})', ('MAIN_THREAD_JANK', {'log_type': '0'})))
            self.assertIn('NotSupported', cm.exception.message)
        finally:
            self.assertTrue(monitor.unexport(server))
            self.assertFalse(monitor.unexport(server))
            server.close_sync(None)
            client.close_sync(None)


if __name__ == '__main__':
    unittest.main(verbosity=2)
