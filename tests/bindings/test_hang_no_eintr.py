#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A PyGObject program's hang monitor never interrupts a blocked callback.

Callbacks block 400 ms (past the 100 ms threshold) in libc's poll() and
nanosleep() (through ctypes, which, unlike Python's own wrappers, shows
EINTR to the caller), os.read() on a pipe fed after 400 ms, and
GLib.usleep(). Each runs its full time without EINTR, and its hang report
has a stack taken through /proc (StackMethod "proc-syscall") that names
the blocking libc call and the Python callback.

Run with /usr/bin/python3 and the environment tests/bindings/meson.build
sets up.
"""

import ctypes
import errno
import os
import re
import shutil
import tempfile
import threading
import time
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

BLOCK_S = 0.4
libc = ctypes.CDLL(None, use_errno=True)


class Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def block_in_poll():
    ctypes.set_errno(0)
    return libc.poll(None, 0, int(BLOCK_S * 1000)), ctypes.get_errno()


def block_in_nanosleep():
    ctypes.set_errno(0)
    duration = Timespec(0, int(BLOCK_S * 1e9))
    return libc.nanosleep(ctypes.byref(duration), None), ctypes.get_errno()


def block_in_read():
    read_end, write_end = os.pipe()
    threading.Timer(BLOCK_S, os.write, (write_end, b'x')).start()
    try:
        return len(os.read(read_end, 1)), 0
    finally:
        os.close(read_end)
        os.close(write_end)


def block_in_usleep():
    GLib.usleep(int(BLOCK_S * 1e6))
    return 0, 0


class HangNoEintrTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='perfmon-py-no-eintr-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.monitor = Perfmon.Monitor.get_default()
        self.hang_monitor = Perfmon.HangMonitor.new(self.monitor)
        self.addCleanup(self.hang_monitor.stop)
        self.hang_monitor.props.pings_dir = os.path.join(self.dir, 'pings')
        self.hang_monitor.props.log_dir = self.dir
        self.hang_monitor.props.threshold = 100
        self.assertTrue(self.hang_monitor.start())
        self.loop = GLib.MainLoop.new(None, False)

    def run_blocking(self, function, blocking_names, expected_result=0):
        reports = []
        results = []

        def on_hang(hang_monitor, report):
            reports.append(report)

        def on_timeout():
            start = time.monotonic()
            result, error = function()
            results.append((result, error, time.monotonic() - start))
            return GLib.SOURCE_REMOVE

        def check_done():
            if results and reports:
                self.loop.quit()
                return GLib.SOURCE_REMOVE
            return GLib.SOURCE_CONTINUE

        def on_safety():
            self.loop.quit()
            return GLib.SOURCE_REMOVE

        handler = self.hang_monitor.connect('hang', on_hang)
        GLib.timeout_add(50, on_timeout)
        done = GLib.timeout_add(20, check_done)
        safety = GLib.timeout_add_seconds(20, on_safety)
        try:
            self.loop.run()
        finally:
            self.hang_monitor.disconnect(handler)
            for source in (done, safety):
                if GLib.main_context_default().find_source_by_id(source):
                    GLib.source_remove(source)

        self.assertEqual(len(results), 1)
        result, error, seconds = results[0]
        # The full time, and no EINTR.
        self.assertNotEqual(error, errno.EINTR, results)
        self.assertEqual(result, expected_result, results)
        self.assertGreaterEqual(seconds, BLOCK_S - 0.001, results)

        self.assertTrue(reports, 'no hang report')
        report = reports[0]
        self.assertEqual(report.get_annotation('StackMethod'), 'proc-syscall')
        self.assertIsNone(report.get_annotation('StackSignalInterruptedSyscall'))
        stack = report.dup_stack()
        self.assertTrue(any(re.search(r'\((_*(GI_+)?(libc_)?)?(%s)\+0x' % '|'.join(blocking_names), f)
                            for f in stack), stack)
        self.assertTrue(any(f.startswith(function.__name__ + ' (') for f in stack), stack)

    def test_poll(self):
        self.run_blocking(block_in_poll, ['poll'])

    def test_nanosleep(self):
        self.run_blocking(block_in_nanosleep, ['clock_nanosleep'])

    def test_read(self):
        self.run_blocking(block_in_read, ['read'], expected_result=1)

    def test_usleep(self):
        self.run_blocking(block_in_usleep, ['clock_nanosleep'])


if __name__ == '__main__':
    unittest.main()
