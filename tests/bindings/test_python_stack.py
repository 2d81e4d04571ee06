#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Python frames of a hung PyGObject program, in its hang reports.

A hang in Python code names the Python functions on the stack, "function
(file:line)", interleaved with the native frames (after the interpreter's
evaluation loop) and in the pseudo stack, in the report, its JSON and the
ping. A hang in C code that holds the GIL is reported without them, says
why, keeps its native stack, and does not stall the program.

Run with /usr/bin/python3 and the environment tests/bindings/meson.build
sets up.
"""

import ctypes
import json
import os
import re
import shutil
import tempfile
import time
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

THRESHOLD_MS = 100
HANG_S = 0.4
SAFETY_TIMEOUT_S = 20
THIS_FILE = os.path.abspath(__file__)


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def hang_in_python():
    spin(HANG_S)


def hang_holding_the_gil():
    # A PyDLL call keeps the GIL: the interpreter cannot let it go.
    # g_usleep() sleeps on through the capture's signal (usleep() would
    # return early).
    ctypes.PyDLL('libglib-2.0.so.0').g_usleep(int(HANG_S * 1e6))


def python_frame(function):
    return re.compile(r'^%s \((.*):(\d+)\)$' % re.escape(function))


class PythonStackTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='perfmon-py-stack-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.context = GLib.MainContext.default()
        self.monitor = Perfmon.Monitor.get_default()
        self.hang_monitor = Perfmon.HangMonitor.new(self.monitor)
        self.addCleanup(self.hang_monitor.stop)
        self.hang_monitor.props.pings_dir = os.path.join(self.dir, 'pings')
        self.hang_monitor.props.log_dir = self.dir
        self.hang_monitor.props.threshold = THRESHOLD_MS
        self.assertTrue(self.hang_monitor.start())
        self.loop = GLib.MainLoop.new(self.context, False)

    def hang(self, function):
        reports = []

        def on_hang(hang_monitor, report):
            reports.append(report)
            self.loop.quit()

        def on_timeout(*args):
            function()
            return GLib.SOURCE_REMOVE

        def on_safety(*args):
            self.loop.quit()
            return GLib.SOURCE_REMOVE

        handler = self.hang_monitor.connect('hang', on_hang)
        GLib.timeout_add(50, on_timeout)
        safety = GLib.timeout_add_seconds(SAFETY_TIMEOUT_S, on_safety)
        try:
            self.loop.run()
        finally:
            self.hang_monitor.disconnect(handler)
            if reports:
                GLib.source_remove(safety)
        self.assertEqual(len(reports), 1, 'no hang report')
        return reports[0]

    def assert_python_frames(self, frames, where):
        inner = [i for i, f in enumerate(frames) if python_frame('hang_in_python').match(f)]
        outer = [i for i, f in enumerate(frames) if python_frame('PythonStackTest.hang.<locals>.on_timeout').match(f)]
        self.assertEqual(len(inner), 1, '%s: %s' % (where, frames))
        self.assertEqual(len(outer), 1, '%s: %s' % (where, frames))
        # Outermost first: the callback, then the function it called.
        self.assertLess(outer[0], inner[0], frames)
        match = python_frame('hang_in_python').match(frames[inner[0]])
        self.assertEqual(os.path.realpath(match.group(1)), os.path.realpath(THIS_FILE))
        self.assertGreater(int(match.group(2)), 0)

    def test_python_frames(self):
        report = self.hang(hang_in_python)
        self.assertIsNone(report.get_script_stack_unavailable_reason())
        stack = report.dup_stack()
        self.assert_python_frames(stack, 'stack')
        # Interleaved: after the interpreter's evaluation loop that runs
        # the callback, under GLib's dispatch.
        native = re.compile(r'^[^ ]+\+0x[0-9a-f]+( \(.*\+0x[0-9a-f]+\))?$')
        first_python = next(i for i, f in enumerate(stack) if not native.match(f))
        self.assertIn('(_PyEval_EvalFrameDefault+0x', stack[first_python - 1], stack)
        callback = next(i for i, f in enumerate(stack)
                        if python_frame('PythonStackTest.hang.<locals>.on_timeout').match(f))
        dispatch = [i for i, f in enumerate(stack) if '(g_main_context_dispatch+0x' in f]
        self.assertTrue(dispatch and dispatch[0] < callback, stack)
        self.assert_python_frames(list(report.get_pseudo_stack()), 'pseudo stack')

        doc = json.loads(report.to_json())
        self.assert_python_frames([f for f in doc['stack'] if isinstance(f, str)], 'JSON stack')
        self.assert_python_frames(doc['pseudoStack'], 'JSON pseudo stack')
        self.assertNotIn('scriptStackUnavailable', doc)

        path = self.hang_monitor.flush_ping()
        with open(path) as f:
            ping = json.load(f)
        self.assert_python_frames(ping['payload']['hangs'][0]['pseudoStack'], 'ping')

    def test_gil_not_released(self):
        started = time.monotonic()
        report = self.hang(hang_holding_the_gil)
        # The report came while the hang went on or right after: the
        # capture did not wait for the GIL.
        self.assertLess(time.monotonic() - started, 10)
        reason = report.get_script_stack_unavailable_reason()
        self.assertIsNotNone(reason, report.dup_stack())
        self.assertIn('GIL', reason)
        # The native stack is kept: the C function that holds the GIL.
        self.assertIsNone(report.get_stack_unavailable_reason())
        stack = report.dup_stack()
        self.assertTrue(any('(g_usleep+0x' in f for f in stack), stack)
        self.assertFalse(any(python_frame('hang_holding_the_gil').match(f) for f in stack), stack)
        doc = json.loads(report.to_json())
        self.assertEqual(doc['scriptStackUnavailable'], reason)

        # The helper got the GIL back and serves the next hang.
        report = self.hang(hang_in_python)
        for attempt in range(3):
            if report.get_script_stack_unavailable_reason() is None:
                break
            report = self.hang(hang_in_python)
        self.assertIsNone(report.get_script_stack_unavailable_reason())
        self.assert_python_frames(report.dup_stack(), 'stack after a GIL timeout')


if __name__ == '__main__':
    unittest.main()
