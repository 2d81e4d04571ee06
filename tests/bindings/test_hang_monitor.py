#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of Perfmon.HangMonitor and Perfmon.HangReport through PyGObject.

Run with Debian's /usr/bin/python3 (it has PyGObject) and an environment in
which GI_TYPELIB_PATH, LD_LIBRARY_PATH and PYTHONPATH point at the build and
at introspection/python; tests/bindings/meson.build sets that up. Exits
non-zero if any test fails.

A hang is a busy stretch of the watched thread's loop: here a timeout
source whose callback busy-waits in Python, which the C watchdog thread
catches without the GIL.
"""

import json
import os
import re
import shutil
import tempfile
import time
import unittest

# Any GLib critical (a misused or misbehaving API) aborts the run. GLib reads
# G_DEBUG when it is loaded, so set it before importing gi.
os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

THRESHOLD_MS = 100
HANG_MS = 300
# The hang monitor reports a duration measured from the thread's own
# timestamps, which may start a little after the callback's clock.
MIN_DURATION_MS = 295
SAFETY_TIMEOUT_S = 10
REPORT_KEYS = ('duration', 'thread', 'runnableName', 'process', 'remoteType',
               'annotations', 'pseudoStack', 'stack', 'modules')


def labels_only(pseudo_stack):
    """The labels of a pseudo stack, without its Python frames
    ("function (file.py:line)", see test_python_stack.py)."""
    return [f for f in pseudo_stack if not re.search(r' \(.*\.py:\d+\)$', f)]


def spin(seconds):
    """Busy-waits @seconds of wall time on this thread."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


class HangMonitorTestCase(unittest.TestCase):
    """A hang monitor watching a fresh context, thread-default meanwhile."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='perfmon-py-hang-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.pings_dir = os.path.join(self.dir, 'pings')

        self.context = GLib.MainContext.new()
        self.context.push_thread_default()
        self.addCleanup(self.context.pop_thread_default)

        self.monitor = Perfmon.Monitor.new(self.context)
        self.hang_monitor = Perfmon.HangMonitor.new(self.monitor)
        # Cleanups run last in, first out: stop before popping the context.
        self.addCleanup(self.hang_monitor.stop)
        self.hang_monitor.props.pings_dir = self.pings_dir
        self.hang_monitor.props.log_dir = self.dir
        self.hang_monitor.props.threshold = THRESHOLD_MS
        self.loop = GLib.MainLoop.new(self.context, False)

    def add_named_source(self, name, callback, delay_ms):
        source = GLib.timeout_source_new(delay_ms)
        source.set_name(name)
        source.set_callback(callback)
        source.attach(self.context)
        return source

    def run_until(self, predicate, what):
        """Runs the loop until @predicate() holds; fails after a while."""
        timed_out = []

        def on_safety_timeout(*user_data):
            timed_out.append(True)
            self.loop.quit()
            return GLib.SOURCE_REMOVE

        safety = GLib.timeout_source_new_seconds(SAFETY_TIMEOUT_S)
        safety.set_callback(on_safety_timeout)
        safety.attach(self.context)
        try:
            while not predicate() and not timed_out:
                self.loop.run()
        finally:
            safety.destroy()
        if timed_out:
            self.fail('timed out after %d s waiting for %s' % (SAFETY_TIMEOUT_S, what))

    def hang_once(self, name, label, dynamic):
        """Hangs the loop once for HANG_MS in source @name, under the label
        (@label, @dynamic); returns the report of the hang."""
        reports = []

        def on_hang(hang_monitor, report):
            reports.append(report)
            self.loop.quit()

        def hang(*user_data):
            Perfmon.label_push(label, dynamic)
            try:
                spin(HANG_MS / 1000)
            finally:
                Perfmon.label_pop()
            return GLib.SOURCE_REMOVE

        handler = self.hang_monitor.connect('hang', on_hang)
        try:
            self.add_named_source(name, hang, 50)
            self.run_until(lambda: reports, 'the hang signal')
        finally:
            self.hang_monitor.disconnect(handler)
        self.assertEqual(len(reports), 1)
        return reports[0]

    def assertPerfmonError(self, cm, code, *words):
        error = cm.exception
        self.assertEqual(error.domain, 'perfmon-error-quark')
        self.assertTrue(error.matches(Perfmon.error_quark(), code),
                        'GLib.Error %r does not match %r' % (error, code))
        for word in words:
            self.assertIn(word, error.message)


class TestHangMonitor(HangMonitorTestCase):
    def test_properties(self):
        hang_monitor = self.hang_monitor
        self.assertEqual(hang_monitor.get_monitor(), self.monitor)
        self.assertEqual(hang_monitor.props.monitor, self.monitor)
        self.assertEqual(hang_monitor.get_threshold(), THRESHOLD_MS)
        hang_monitor.set_threshold(250)
        self.assertEqual(hang_monitor.props.threshold, 250)
        self.assertEqual(hang_monitor.get_permahang_threshold(),
                         Perfmon.HANG_DEFAULT_PERMAHANG_THRESHOLD_MS)
        hang_monitor.set_permahang_threshold(5000)
        self.assertEqual(hang_monitor.props.permahang_threshold, 5000)
        self.assertEqual(hang_monitor.props.hangs_per_ping, Perfmon.HANG_DEFAULT_HANGS_PER_PING)
        self.assertEqual(hang_monitor.props.pings_dir, self.pings_dir)
        self.assertEqual(hang_monitor.props.process_type, 'default')
        self.assertIsNone(hang_monitor.props.remote_type)

        self.assertFalse(hang_monitor.is_running())
        self.assertTrue(hang_monitor.start())
        self.assertTrue(hang_monitor.is_running())
        self.assertTrue(hang_monitor.start())   # already running: fine
        hang_monitor.stop()
        self.assertFalse(hang_monitor.is_running())

    def test_hang_report_and_ping(self):
        hang_monitor = self.hang_monitor
        pings = []
        hang_monitor.connect('ping', lambda m, path: pings.append(path))

        Perfmon.annotate('UserInteracting', 'true')
        try:
            self.assertTrue(hang_monitor.start())
            report = self.hang_once('py-hang', 'py label', 'dyn')
        finally:
            Perfmon.annotate('UserInteracting', None)

        self.assertIsInstance(report, Perfmon.HangReport)
        self.assertGreaterEqual(report.get_duration(), MIN_DURATION_MS)
        self.assertLess(report.get_duration(), 5000)
        self.assertEqual(report.get_runnable_name(), 'py-hang')
        self.assertEqual(labels_only(report.get_pseudo_stack()), ['py label dyn'])
        self.assertIsInstance(report.get_thread(), str)
        self.assertEqual(report.get_process_type(), 'default')
        self.assertIsNone(report.get_remote_type())
        self.assertEqual(report.get_annotation('UserInteracting'), 'true')
        self.assertIsNone(report.get_annotation('NoSuchAnnotation'))
        self.assertIn('UserInteracting', report.dup_annotation_keys())
        stack = report.dup_stack()
        self.assertIsInstance(stack, list)
        self.assertIn('py label dyn', stack)
        reason = report.get_stack_unavailable_reason()
        self.assertTrue(reason is None or isinstance(reason, str))

        doc = json.loads(report.to_json())
        for key in REPORT_KEYS:
            self.assertIn(key, doc)
        self.assertEqual(doc['runnableName'], 'py-hang')
        self.assertEqual(labels_only(doc['pseudoStack']), ['py label dyn'])
        self.assertIsNone(doc['remoteType'])
        self.assertIn(['UserInteracting', 'true'], doc['annotations'])

        # The report outlives the signal emission and the hang monitor's
        # own references.
        self.assertEqual(report.get_runnable_name(), 'py-hang')

        path = hang_monitor.flush_ping()
        self.assertIsInstance(path, str)
        self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(os.path.dirname(path), self.pings_dir)
        # The ping signal is emitted synchronously by flush_ping().
        self.assertEqual(pings, [path])
        with open(path, encoding='utf-8') as f:
            ping = json.load(f)
        self.assertEqual(ping['type'], 'bhr')
        hangs = ping['payload']['hangs']
        self.assertEqual(len(hangs), 1)
        self.assertEqual(hangs[0]['runnableName'], 'py-hang')
        self.assertEqual(labels_only(hangs[0]['pseudoStack']), ['py label dyn'])

        # Nothing left to send: no path, no error.
        self.assertIsNone(hang_monitor.flush_ping())

        hang_monitor.stop()
        self.assertFalse(hang_monitor.is_running())
        self.assertEqual(len(pings), 1)

    def test_short_work_is_not_a_hang(self):
        hang_monitor = self.hang_monitor
        hangs = []
        hang_monitor.connect('hang', lambda m, report: hangs.append(report))
        self.assertTrue(hang_monitor.start())
        runs = []

        def work(*user_data):
            spin(0.010)
            runs.append(True)
            if len(runs) < 5:
                return GLib.SOURCE_CONTINUE
            self.loop.quit()
            return GLib.SOURCE_REMOVE

        self.add_named_source('py-short', work, 5)
        self.run_until(lambda: len(runs) >= 5, 'five short runs')
        self.assertEqual(hangs, [])

    def test_flush_ping_errors(self):
        with self.assertRaises(GLib.Error) as cm:
            self.hang_monitor.flush_ping()
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_ARGUMENT)

    def test_work_units_without_context(self):
        """A monitor without a context is watched through its work units."""
        monitor = Perfmon.Monitor.new(None)
        detached = Perfmon.HangMonitor.new(monitor)
        self.addCleanup(detached.stop)
        detached.props.pings_dir = self.pings_dir
        detached.props.log_dir = self.dir
        detached.props.threshold = THRESHOLD_MS
        reports = []

        def on_hang(hang_monitor, report):
            reports.append(report)
            self.loop.quit()

        detached.connect('hang', on_hang)
        self.assertTrue(detached.start())
        self.assertTrue(detached.is_running())
        monitor.work_begin()
        spin(HANG_MS / 1000)
        monitor.work_end()
        self.run_until(lambda: reports, 'the hang signal')
        self.assertEqual(len(reports), 1)
        self.assertGreaterEqual(reports[0].get_duration(), THRESHOLD_MS)

    def test_second_hang_monitor_of_one_monitor(self):
        second = Perfmon.HangMonitor.new(self.monitor)
        second.props.pings_dir = self.pings_dir
        self.assertTrue(self.hang_monitor.start())
        with self.assertRaises(GLib.Error) as cm:
            second.start()
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_ARGUMENT)
        self.hang_monitor.stop()
        self.assertTrue(second.start())
        second.stop()


class TestEventConfig(HangMonitorTestCase):
    def test_valid(self):
        self.assertTrue(self.hang_monitor.set_event_config(
            'MAIN_THREAD_JANK', {'log_type': '0'}))
        self.assertTrue(self.hang_monitor.set_event_config(
            'MAIN_THREAD_JANK', {'log_type': '1', 'sample_interval': '100',
                                 'ignore_startup_time': '3', 'sample_count': '10',
                                 'report_times_per_app': '1'}))

    def test_no_params(self):
        # params is nullable, but log_type is required.
        with self.assertRaises(GLib.Error) as cm:
            self.hang_monitor.set_event_config('MAIN_THREAD_JANK', None)
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_ARGUMENT, 'log_type')

    def test_out_of_range(self):
        with self.assertRaises(GLib.Error) as cm:
            self.hang_monitor.set_event_config(
                'MAIN_THREAD_JANK', {'log_type': '1', 'sample_interval': '40'})
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_ARGUMENT, 'sample_interval')

    def test_unknown_parameter(self):
        with self.assertRaises(GLib.Error) as cm:
            self.hang_monitor.set_event_config('MAIN_THREAD_JANK', {'no_such_param': '1'})
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_ARGUMENT, 'no_such_param')

    def test_unknown_event(self):
        with self.assertRaises(GLib.Error) as cm:
            self.hang_monitor.set_event_config('NO_SUCH_EVENT', {'log_type': '0'})
        self.assertPerfmonError(cm, Perfmon.Error.UNKNOWN_EVENT, 'NO_SUCH_EVENT')


if __name__ == '__main__':
    unittest.main(verbosity=2)
