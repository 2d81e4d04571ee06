#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of Perfmon.timer_set() and Perfmon.timer_cancel() through PyGObject.

Run with Debian's /usr/bin/python3 (it has PyGObject) and an environment in
which GI_TYPELIB_PATH, LD_LIBRARY_PATH and PYTHONPATH point at the build and
at introspection/python; tests/bindings/meson.build sets that up. Exits
non-zero if any test fails.

A CALLBACK timer calls back on perfmon's watchdog thread, not on the
thread that set it. That is safe from Python: PyGObject's callback
trampolines take the GIL (PyGILState_Ensure) around the call and around
the release of the closure, so the callback runs like a function of any
other Python thread, while this thread waits with the GIL released.
"""

import os
import shutil
import tempfile
import threading
import unittest

# Any GLib critical (a misused or misbehaving API) aborts the run. GLib reads
# G_DEBUG when it is loaded, so set it before importing gi.
os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

SAFETY_TIMEOUT_S = 15


class TimerTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='perfmon-py-timer-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        Perfmon.timeout_set_log_dir(self.dir)
        self.addCleanup(Perfmon.timeout_set_log_dir, None)

    def test_log_dir(self):
        self.assertEqual(Perfmon.timeout_get_log_dir(), self.dir)
        Perfmon.timeout_set_log_dir(None)
        self.assertTrue(Perfmon.timeout_get_log_dir().endswith(
            os.path.join('perfmon', 'watchdog')))

    def test_callback_on_watchdog_thread(self):
        called = threading.Event()
        calls = []

        def on_timeout(timer_id, name, data):
            calls.append((timer_id, name, data, threading.get_ident()))
            called.set()

        timer_id = Perfmon.timer_set('py callback', 50, Perfmon.TimerFlags.CALLBACK,
                                     on_timeout, 'some data')
        self.assertNotEqual(timer_id, 0)
        self.assertTrue(called.wait(SAFETY_TIMEOUT_S), 'the timer did not fire')
        self.assertEqual(len(calls), 1)
        fired_id, name, data, thread = calls[0]
        self.assertEqual(fired_id, timer_id)
        self.assertEqual(name, 'py callback')
        self.assertEqual(data, 'some data')
        self.assertNotEqual(thread, threading.get_ident())
        # It expired: nothing to cancel.
        self.assertFalse(Perfmon.timer_cancel(timer_id))
        # No LOG flag, no log.
        self.assertEqual(os.listdir(self.dir), [])

    def test_cancelled(self):
        calls = []
        witness = threading.Event()

        timer_id = Perfmon.timer_set('py cancelled', 300,
                                     Perfmon.TimerFlags.CALLBACK | Perfmon.TimerFlags.LOG,
                                     lambda *args: calls.append(args))
        # Expires after the cancelled one would have.
        Perfmon.timer_set('py witness', 600, Perfmon.TimerFlags.CALLBACK,
                          lambda *args: witness.set())
        self.assertTrue(Perfmon.timer_cancel(timer_id))
        self.assertFalse(Perfmon.timer_cancel(timer_id))
        self.assertTrue(witness.wait(SAFETY_TIMEOUT_S), 'the witness did not fire')
        self.assertEqual(calls, [])
        self.assertEqual(os.listdir(self.dir), [])

    def test_errors(self):
        with self.assertRaises(GLib.Error) as caught:
            Perfmon.timer_set('py zero', 0, Perfmon.TimerFlags.LOG, None)
        self.assertTrue(caught.exception.matches(Perfmon.error_quark(),
                                                 Perfmon.Error.INVALID_ARGUMENT))
        self.assertIn('timeout_ms', caught.exception.message)

        with self.assertRaises(GLib.Error) as caught:
            Perfmon.timer_set('py no callback', 100, Perfmon.TimerFlags.CALLBACK, None)
        self.assertIn('callback', caught.exception.message)

        ids = []
        try:
            for i in range(Perfmon.TIMER_MAX_LIVE):
                ids.append(Perfmon.timer_set('py limit %d' % i, 600000,
                                             Perfmon.TimerFlags.LOG, None))
            with self.assertRaises(GLib.Error) as caught:
                Perfmon.timer_set('py one too many', 600000, Perfmon.TimerFlags.LOG, None)
            self.assertTrue(caught.exception.matches(Perfmon.error_quark(),
                                                     Perfmon.Error.LIMIT_REACHED))
            self.assertIn('128', caught.exception.message)
        finally:
            for timer_id in ids:
                self.assertTrue(Perfmon.timer_cancel(timer_id))


if __name__ == '__main__':
    unittest.main()
