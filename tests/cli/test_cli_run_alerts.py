#!/usr/bin/python3
# test_cli_run_alerts.py: perfmon run's alerts name the group that used
# the CPU (issue 23, point 8)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# An unmodified Python program (python_slow_callback.py) uses 150 ms of
# CPU in one timeout callback, more than the monitor's alert threshold
# (64 ms). Under perfmon run, the Alert signals that perfmond relays to a
# subscriber must name the callback's automatic group
# ("__main__.recalculate_totals"), not only the thread ("main thread").

import os
import subprocess
import sys
import unittest

from clitest import BusTestCase, TOOL

import gi
gi.require_version('Gio', '2.0')
from gi.repository import Gio, GLib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW = os.path.join(HERE, 'python_slow_callback.py')


class AlertsTest(BusTestCase):
    def test_python_callback_alert_names_its_group(self):
        self.start_daemon()
        bus = Gio.DBusConnection.new_for_address_sync(
            self.env['DBUS_SESSION_BUS_ADDRESS'],
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)
        self.addCleanup(bus.close_sync, None)
        alerts = []

        def on_alert(connection, sender, path, interface, signal, parameters):
            alerts.append(parameters.unpack())
        bus.signal_subscribe(None, 'org.perfmon.Daemon1', 'Alert', '/org/perfmon/Daemon1', None,
                             Gio.DBusSignalFlags.NONE, on_alert)
        bus.call_sync('org.perfmon.Daemon1', '/org/perfmon/Daemon1', 'org.perfmon.Daemon1', 'Subscribe',
                      None, None, Gio.DBusCallFlags.NONE, 10000, None)

        run = self.start([TOOL, 'run', '--', '/usr/bin/python3', SLOW, '6'], env=self.foreign_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        context = GLib.MainContext.default()

        def named():
            while context.iteration(False):
                pass
            return [a for a in alerts if a[2] == '__main__.recalculate_totals']
        found = self.eventually(named, 'an alert naming the callback\'s group', timeout=60)
        run.wait(timeout=60)
        self.assertGreaterEqual(found[0][3], 64 * 1000)


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
