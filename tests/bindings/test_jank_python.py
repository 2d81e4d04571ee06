#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Python application's jank: its stack log names the Python function.

A 400 ms task after the start-up window is a stack sampling jank (the
seed's 150 ms schedule), over before the seed's first sample: its log
holds the stack taken while it ran, with the Python frame of the busy
function. The jank limits are per process: this file is a process of its
own, one test.
"""

import os
import shutil
import tempfile
import time
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402


def recalculate_spreadsheet(seconds):
    """The application's slow work: busy for @seconds."""
    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        total += 1
    return total


class JankTestCase(unittest.TestCase):
    def test_short_jank_log_names_the_python_function(self):
        log_dir = tempfile.mkdtemp(prefix='perfmon-py-jank-')
        self.addCleanup(shutil.rmtree, log_dir, True)
        context = GLib.MainContext.default()
        loop = GLib.MainLoop.new(context, False)
        monitor = Perfmon.Monitor.new(context)
        hang_monitor = Perfmon.HangMonitor.new(monitor)
        hang_monitor.props.log_dir = log_dir
        hang_monitor.props.pings_dir = os.path.join(log_dir, 'pings')
        self.assertTrue(hang_monitor.set_event_config('MAIN_THREAD_JANK', {
            'log_type': '1', 'sample_interval': '150', 'sample_count': '10',
            'ignore_startup_time': '3', 'report_times_per_app': '1'}))
        hang_monitor.start()
        self.addCleanup(hang_monitor.stop)

        events = []

        def on_jank(hang_monitor, name, params):
            events.append(params.unpack())
            loop.quit()

        def on_timeout():
            recalculate_spreadsheet(0.4)
            return GLib.SOURCE_REMOVE

        def give_up():
            loop.quit()
            return GLib.SOURCE_REMOVE

        hang_monitor.connect('jank', on_jank)
        # After the 3 s start-up window.
        GLib.timeout_add(3500, on_timeout)
        GLib.timeout_add_seconds(20, give_up)
        while not events:
            loop.run()
            if not events:
                break
        self.assertEqual(len(events), 1, 'no jank event')
        event = events[0]
        self.assertGreaterEqual(event['sample_count'], 1)
        self.assertEqual(len(event['external_log']), 1)
        with open(event['external_log'][0]) as f:
            log = f.read()
        print(log)
        self.assertIn('script recalculate_spreadsheet', log)
        self.assertIn('recalculate_spreadsheet', event['heaviest_stack'] + log)


if __name__ == '__main__':
    unittest.main()
