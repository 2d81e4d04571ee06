#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Automatic groups from Python: importing Perfmon names the sources the
program makes after its callables, and the monitor's automatic groups and
hang reports use those names.

Run with /usr/bin/python3 and the environment of tests/bindings/meson.build.
"""

import functools
import os
import time
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, GObject, Perfmon  # noqa: E402


def compartments(snapshot):
    return {g.get_name(): g for g in snapshot.get_groups()
            if g.get_kind() == Perfmon.GroupKind.COMPARTMENT}


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


class Holder:
    def method(self, seen):
        seen.append(GLib.main_current_source().get_name())
        return GLib.SOURCE_REMOVE


def plain(seen, *extra):
    seen.append((GLib.main_current_source().get_name(), extra))
    return GLib.SOURCE_REMOVE


class AutomaticTest(unittest.TestCase):
    def setUp(self):
        self.monitor = Perfmon.Monitor.get_default()
        self.monitor.props.automatic_groups = True

    def run_until(self, predicate):
        deadline = time.monotonic() + 10
        while not predicate():
            self.assertLess(time.monotonic(), deadline)
            GLib.MainContext.default().iteration(True)
        GLib.MainContext.default().iteration(False)

    def test_sources_named_after_callables(self):
        seen = []
        GLib.idle_add(plain, seen, 'x', 'y')
        GLib.idle_add(Holder().method, seen, priority=GLib.PRIORITY_HIGH)
        GLib.timeout_add(1, functools.partial(plain, seen))
        GLib.timeout_add_seconds(0, plain, seen)
        self.run_until(lambda: len(seen) == 4)
        # User data passes through as with PyGObject's own idle_add.
        self.assertIn(('__main__.plain', ('x', 'y')), seen)
        self.assertIn('__main__.Holder.method', seen)
        # The high priority idle ran first.
        self.assertEqual(seen[0], '__main__.Holder.method')
        self.assertEqual(sum(1 for s in seen if s == ('__main__.plain', ())), 2)

        groups = compartments(self.monitor.snapshot())
        self.assertIn('__main__.plain', groups)
        self.assertIn('__main__.Holder.method', groups)

    def test_gobject_alias_still_works(self):
        seen = []
        GObject.idle_add(plain, seen)
        self.run_until(lambda: seen)

    def test_program_names_win(self):
        seen = []
        source_id = GLib.idle_add(plain, seen)
        GLib.MainContext.default().find_source_by_id(source_id).set_name('program name')
        self.run_until(lambda: seen)
        self.assertEqual(seen[0][0], 'program name')

    def test_long_names_bounded(self):
        def f():
            return GLib.SOURCE_REMOVE
        f.__qualname__ = 'é' * 200
        done = []
        GLib.idle_add(lambda: done.append(1))
        GLib.idle_add(f)
        self.run_until(lambda: done)
        for name in compartments(self.monitor.snapshot()):
            self.assertLessEqual(len(name.encode()), 95)

    def test_hang_names_python_callable(self):
        hang_monitor = Perfmon.HangMonitor.new(self.monitor)
        hang_monitor.props.threshold = 100
        tmp = GLib.dir_make_tmp('perfmon-automatic-XXXXXX')
        hang_monitor.props.pings_dir = tmp
        hang_monitor.props.log_dir = tmp
        reports = []
        hang_monitor.connect('hang', lambda m, report: reports.append(report))
        hang_monitor.start()
        GLib.MainContext.default().iteration(False)
        GLib.idle_add(lambda: None)
        GLib.idle_add(long_job)
        GLib.idle_add(lambda: None)
        self.run_until(lambda: reports)
        hang_monitor.stop()
        self.assertEqual(reports[0].get_runnable_name(), '__main__.long_job')
        self.assertEqual(reports[0].get_dispatch_names()[0], '__main__.long_job')
        self.assertGreaterEqual(reports[0].get_dispatch_duration(0), 250)


def long_job():
    spin(0.3)
    return GLib.SOURCE_REMOVE


if __name__ == '__main__':
    unittest.main()
