#!/usr/bin/python3
# test_cli_run_blocked_bindings.py: synchronous D-Bus calls from Python and
# GJS are blocked time under perfmon run (issue 23, point 9)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Unmodified programs, written as users write them (python_dbus_blocking.py,
# gjs_dbus_blocking.js), make one synchronous call from a timeout callback
# to a peer on a private bus that answers 300 ms late. PyGObject and GJS
# call GLib through libffi with pointers from the typelib: only the
# preload's g_typelib_symbol() hook (src/preload/perfmon-preload-typelib.c)
# hands them its interposers. The call must be at least 300 ms of blocked
# time, in the thread group and in the group of the callback that made it.
# (The reply cannot come before the peer's delay: a lower bound, not a
# timing.)

import json
import os
import shutil
import subprocess
import sys
import unittest

from clitest import BusTestCase

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, 'slow_dbus_peer.py')
GJS_PROGRAM = os.path.join(HERE, 'gjs_dbus_blocking.js')
PYTHON_PROGRAM = os.path.join(HERE, 'python_dbus_blocking.py')
DELAY_MS = 300
NAME = 'org.perfmon.test.SlowPeer'
PATH = '/org/perfmon/test/SlowPeer'
INTERFACE = 'org.perfmon.test.SlowPeer'


class BlockedBindingsTest(BusTestCase):
    def setUp(self):
        super().setUp()
        peer = subprocess.Popen(['/usr/bin/python3', PEER, str(DELAY_MS)], env=self.env,
                                stdout=subprocess.PIPE, universal_newlines=True)
        self.addCleanup(self.stop, peer)
        self.assertEqual(peer.stdout.readline().strip(), 'ready')

    def check_blocked(self, command, callback_group):
        summary = self.path('summary.json')
        env = self.foreign_env()
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        result = self.perfmon('run', '--summary', summary, '--', *command, NAME, PATH, INTERFACE,
                              env=env, timeout=90)
        self.assertExit(result, 0)
        self.assertIn(': called', result.stdout)
        with open(summary) as f:
            data = json.load(f)
        groups = data['snapshot']['groups']
        thread = [g for g in groups if g['kind'] == 'thread'][0]
        self.assertGreaterEqual(thread['blocked_time'], DELAY_MS * 1000, groups)
        self.assertGreaterEqual(data['blocked_time'], DELAY_MS * 1000)
        callback = [g for g in groups if g['kind'] == 'compartment' and g['name'] == callback_group]
        self.assertEqual(len(callback), 1, groups)
        self.assertGreaterEqual(callback[0]['blocked_time'], DELAY_MS * 1000, groups)

    @unittest.skipUnless(shutil.which('gjs'), 'gjs missing')
    def test_gjs_connection_call_sync(self):
        # GJS sources are named after their JavaScript callback, where it
        # is written (doc/addons.md): callSlow(), line 16.
        self.check_blocked(['gjs', GJS_PROGRAM, 'connection'], 'callSlow (gjs_dbus_blocking.js:16)')

    @unittest.skipUnless(shutil.which('gjs'), 'gjs missing')
    def test_gjs_proxy_wrapper_sync(self):
        self.check_blocked(['gjs', GJS_PROGRAM, 'proxy'], 'callSlow (gjs_dbus_blocking.js:16)')

    def test_python_connection_call_sync(self):
        self.check_blocked(['/usr/bin/python3', PYTHON_PROGRAM, 'connection'], '__main__.call_slow')

    def test_python_proxy_call_sync(self):
        self.check_blocked(['/usr/bin/python3', PYTHON_PROGRAM, 'proxy'], '__main__.call_slow')


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
