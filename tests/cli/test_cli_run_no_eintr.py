#!/usr/bin/python3
# test_cli_run_no_eintr.py: perfmon run takes a blocked thread's stack without interrupting it
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A Python program written as users write them (python_blocking.py) blocks
# its loop 400 ms in poll(), nanosleep(), read() on a pipe and g_usleep().
# Under perfmon run each call runs its full time with no EINTR, and each
# hang is reported with a stack read through /proc ("StackMethod":
# "proc-syscall") that names the blocking libc call and the Python
# callback.

import json
import os
import unittest

from clitest import CliTestCase

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'python_blocking.py')

BLOCKING = {
    'poll': ['poll'],
    'nanosleep': ['clock_nanosleep'],
    'read': ['read'],
    'usleep': ['clock_nanosleep'],
}
CALLBACKS = {
    'poll': 'block_in_poll',
    'nanosleep': 'block_in_nanosleep',
    'read': 'block_in_read',
    'usleep': 'block_in_usleep',
}


class RunNoEintrTest(CliTestCase):
    def test_python_blocking_calls(self):
        summary = self.path('summary.json')
        env = self.foreign_env(own=False)
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        result = self.perfmon('run', '--threshold', '100', '--summary', summary, '--',
                              '/usr/bin/python3', SCRIPT, env=env)
        self.assertExit(result, 0)
        calls = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{')]
        self.assertEqual([c['call'] for c in calls], list(BLOCKING), result.stdout)
        for call in calls:
            # The full time, and no EINTR.
            self.assertNotEqual(call['errno'], 4, call)
            self.assertEqual(call['result'], 1 if call['call'] == 'read' else 0, call)
            # The read's writer starts its 400 ms before the read is
            # timed: its promise is the byte, with no EINTR (above).
            if call['call'] != 'read':
                self.assertGreaterEqual(call['seconds'], 0.399, call)

        with open(summary) as f:
            data = json.load(f)
        for name, callback in CALLBACKS.items():
            hangs = [h for h in data['hangs'] if callback in h['runnableName']]
            self.assertTrue(hangs, (name, [h['runnableName'] for h in data['hangs']]))
            hang = max(hangs, key=lambda h: h['duration'])
            annotations = dict(hang['annotations'])
            self.assertEqual(annotations.get('StackMethod'), 'proc-syscall', hang)
            self.assertNotIn('StackSignalInterruptedSyscall', annotations)
            symbols = [s or '' for s in hang['symbols']]
            self.assertTrue(any(s.split('+')[0].lstrip('_') in [b, 'libc_' + b, 'GI___' + b]
                                or s.startswith(b + '+') for s in symbols for b in BLOCKING[name]),
                            (name, symbols))
            # The Python callback, as a script frame.
            self.assertTrue(any(isinstance(frame, str) and frame.startswith(callback + ' (')
                                for frame in hang['stack']), (name, hang['stack']))


if __name__ == '__main__':
    unittest.main()
