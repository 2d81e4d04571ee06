#!/usr/bin/python3
# test_cli_run_session_end.py: the end of the session (its bus closes at
# logout) is no warning from a program run under perfmon run
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import subprocess
import sys
import time
import unittest

from clitest import BusTestCase

PROGRAM = '''
from gi.repository import GLib

loop = GLib.MainLoop()
GLib.timeout_add(30_000, loop.quit)
loop.run()
'''


class SessionEndTest(BusTestCase):
    def test_bus_gone_is_no_warning(self):
        # Its own bus, to close it under the program (BusTestCase's is
        # stopped only at the end).
        bus = subprocess.Popen(['dbus-daemon', '--session', '--nofork', '--print-address=1'],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               universal_newlines=True)
        self.addCleanup(self.stop, bus)
        env = self.foreign_env()
        env['DBUS_SESSION_BUS_ADDRESS'] = bus.stdout.readline().strip()
        env.pop('G_MESSAGES_DEBUG', None)
        self.start_daemon_on(env)
        script = self.path('session.py')
        with open(script, 'w') as f:
            f.write(PROGRAM)
        program = self.start([os.environ['PERFMON_TOOL'], 'run', '--', '/usr/bin/python3', script],
                             env=env, stderr=subprocess.PIPE, universal_newlines=True)
        # Registered with perfmond: exported on that bus.
        self.eventually(lambda: self.registered(env), 'the program to register with perfmond', timeout=60)
        bus.kill()
        bus.wait()
        _, err = program.communicate(timeout=60)
        for level in ('WARNING', 'CRITICAL', 'ERROR'):
            self.assertNotIn(level, err)
        # perfmon run still says what it knows.
        self.assertIn('perfmon: summary of ', err)

    def registered(self, env):
        result = self.perfmon('snapshot', '--json', env=env)
        return result.returncode == 0 and '(python3, pid ' in result.stdout

    def start_daemon_on(self, env):
        self.start([os.environ['PERFMOND_PATH'], '--poll-interval', '200',
                    '--pidfile', self.path('perfmond.pid')], env=env,
                   stderr=subprocess.DEVNULL)
        self.eventually(lambda: self.perfmon('hangs', 'list', env=env).returncode == 0,
                        'perfmond to own its name')


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
