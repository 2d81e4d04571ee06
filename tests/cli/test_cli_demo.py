#!/usr/bin/python3
# test_cli_demo.py: perfmon demo, as the README's first command runs it
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import re
import shutil
import unittest

from clitest import CliTestCase


class DemoTest(CliTestCase):
    @unittest.skipIf(shutil.which('dbus-daemon') is None, 'dbus-daemon missing')
    def test_demo_without_a_session_bus(self):
        env = dict(self.env)
        # No bus at all: the demo starts a private one and stops it.
        env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        env['XDG_RUNTIME_DIR'] = self.path('runtime')
        os.makedirs(env['XDG_RUNTIME_DIR'], mode=0o700)
        result = self.perfmon('demo', '--refreshes', '2', env=env, timeout=90)
        self.assertExit(result, 0)
        out = result.stdout
        self.assertIn('Starting a private session bus', out)
        self.assertEqual(out.count('GROUP'), 2)
        self.assertIn('Spell checker', out)
        self.assertIn('perfmon hangs show', out)
        # The hang shown names the add-on that caused it, and its label is in
        # the report. Usually the sync agent's stall; on a loaded machine the
        # CPU-hungry spell checker may hang longer, and is then the one shown.
        match = re.search(r'The loop stalled in add-on (sync|spellcheck)@example\.org', out)
        self.assertIsNotNone(match, out)
        self.assertIn('Labels (outermost first):\n  add-on %s@example.org' % match.group(1), out)
        # The tables fit 80 columns (stack frames are as long as symbols).
        for line in out[:out.index('perfmon hangs show')].splitlines():
            self.assertLessEqual(len(line), 80, line)

    @unittest.skipIf(shutil.which('dbus-daemon') is None, 'dbus-daemon missing')
    def test_demo_program_that_cannot_start(self):
        env = dict(self.env)
        env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        env['XDG_RUNTIME_DIR'] = self.path('runtime')
        os.makedirs(env['XDG_RUNTIME_DIR'], mode=0o700)
        # Exits at once: often reaped before the demo asks for its pid.
        env['PERFMON_DEMO_PROGRAM'] = shutil.which('false')
        result = self.perfmon('demo', '--refreshes', '1', env=env, timeout=90)
        self.assertExit(result, 1)
        self.assertIn('the demo program exited at start', result.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
